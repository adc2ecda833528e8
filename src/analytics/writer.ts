import type { Logger } from '../kernel/log.ts'
import { ClickHouseRefusal, type ClickHouseHttp } from './clickhouse-http.ts'
import { EXECUTION_LOGS, REQUEST_LOGS, setupTables, sweepPartitions, type Setup } from './tables.ts'

/*
 * The analytics writer of a resources process: log rows arrive as JSONEachRow text (request-log
 * batches from the gateways as they were published, execution records from the job events),
 * wait in one bounded buffer, and go to ClickHouse every `flushMs` as one insert per table. Nothing that adds rows ever
 * waits on ClickHouse. While ClickHouse is down or slow the rows stay (inserts retried on the
 * next tick) up to `capacity` records in all; beyond that new rows are dropped and counted, and
 * the health view (`analyticsHealth`) says so with the last error. Rows ClickHouse refuses (it
 * answered, with an error: malformed text, never from this platform's gateways) are dropped and
 * counted too, so one bad batch cannot hold the buffer forever; up to 100 bad lines per insert are
 * skipped by ClickHouse itself (`input_format_allow_errors_num`).
 *
 * The tables are set up on the first tick that reaches the server (so a store that is down at
 * start is set up when it comes back). Retention without table TTL (ClickHouse < 19.6) is the
 * partition sweep, run after setup and then every `sweepMs`.
 */
export interface WriterOptions {
  database: string
  retentionDays: number
  /** Records held at most (ANALYTICS_BUFFER_RECORDS). */
  capacity: number
  flushMs?: number
  sweepMs?: number
  /** Rows per insert at most. */
  maxInsertRows?: number
}

export interface AnalyticsHealth {
  /** `disabled`: no ANALYTICS_HOST; `degraded`: the last attempt failed or rows were dropped since the last success. */
  status: 'ok' | 'degraded' | 'disabled'
  /** Rows dropped since start because the buffer was full. */
  dropped: number
  /** The last failure talking to ClickHouse (null when the last attempt succeeded). */
  last_error: string | null
  /** Rows waiting for their insert. */
  buffered: number
  /** Rows inserted since start. */
  written: number
}

type Table = typeof REQUEST_LOGS | typeof EXECUTION_LOGS

/** JSONEachRow text of some rows: whole lines, each ending with a newline. */
interface Chunk {
  text: string | Uint8Array
  rows: number
}

export class AnalyticsWriter {
  private readonly held: Record<Table, Chunk[]> = { [REQUEST_LOGS]: [], [EXECUTION_LOGS]: [] }
  private count = 0
  private dropped = 0
  private droppedSinceOk = 0
  private written = 0
  private lastError: string | null = null
  private setup: Setup | null = null
  private lastSweep = 0
  private timer: NodeJS.Timeout | undefined
  private running: Promise<void> | null = null
  private stopped = false
  private readonly listeners = new Set<() => void>()
  private readonly ch: ClickHouseHttp
  private readonly o: WriterOptions
  private readonly log: Logger

  constructor(ch: ClickHouseHttp, o: WriterOptions, log: Logger) {
    this.ch = ch
    this.o = o
    this.log = log
  }

  start(): void {
    this.schedule(0)
  }

  /**
   * Takes `rows` rows of `table` as JSONEachRow text (whole lines). A chunk that does not fit in
   * the buffer is dropped whole and counted. Never waits.
   */
  add(table: Table, text: string | Uint8Array, rows: number): void {
    if (rows <= 0) return
    if (this.count + rows <= this.o.capacity) {
      this.held[table].push({ text, rows })
      this.count += rows
      return
    }
    this.drop(rows, 'analytics buffer full: dropping log rows')
  }

  private drop(rows: number, why: string): void {
    if (this.droppedSinceOk === 0) this.log.warn({ capacity: this.o.capacity, lastError: this.lastError }, why)
    this.dropped += rows
    this.droppedSinceOk += rows
    this.changed()
  }

  health(): AnalyticsHealth {
    return {
      status: this.lastError !== null || this.droppedSinceOk > 0 ? 'degraded' : 'ok',
      dropped: this.dropped,
      last_error: this.lastError,
      buffered: this.count,
      written: this.written,
    }
  }

  /** Called after every change of the health numbers (tests wait on it instead of sleeping). */
  onChange(fn: () => void): () => void {
    this.listeners.add(fn)
    return () => this.listeners.delete(fn)
  }

  /** Runs one tick now (setup, sweep when due, inserts) and waits for it. */
  async flush(): Promise<void> {
    while (this.running !== null) await this.running
    await this.runTick()
  }

  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    while (this.running !== null) await this.running
    // one last attempt for what is held; a store that is down loses it
    await this.tick().catch(() => undefined)
  }

  private changed(): void {
    for (const fn of this.listeners) fn()
  }

  private schedule(ms: number): void {
    if (this.stopped) return
    this.timer = setTimeout(() => void this.runTick().finally(() => this.schedule(this.o.flushMs ?? 1000)), ms)
    this.timer.unref()
  }

  private runTick(): Promise<void> {
    const run = this.tick()
      .catch((err: unknown) => {
        const message = err instanceof Error ? err.message : String(err)
        if (this.lastError !== message) this.log.warn({ err: message }, 'analytics store write failed')
        this.lastError = message
      })
      .finally(() => {
        this.running = null
        this.changed()
      })
    this.running = run
    return run
  }

  private async tick(): Promise<void> {
    let reached = false
    let refused = false
    if (this.setup === null) {
      reached = true
      this.setup = await setupTables(this.ch, this.o.database, this.o.retentionDays)
      this.log.info(
        { version: this.setup.version, retention: this.setup.ttl ? 'table TTL' : 'hourly partition sweep' },
        'analytics tables ready',
      )
    }
    if (!this.setup.ttl && Date.now() - this.lastSweep >= (this.o.sweepMs ?? 3_600_000)) {
      const dropped = await sweepPartitions(this.ch, this.o.database, this.o.retentionDays)
      reached = true
      this.lastSweep = Date.now()
      if (dropped.length > 0) this.log.info({ partitions: dropped }, 'analytics retention: old partitions dropped')
    }
    const max = this.o.maxInsertRows ?? 10_000
    for (const table of [REQUEST_LOGS, EXECUTION_LOGS] as const) {
      const chunks = this.held[table]
      while (chunks.length > 0) {
        let n = 0
        let rows = 0
        while (n < chunks.length && (n === 0 || rows + (chunks[n] as Chunk).rows <= max))
          rows += (chunks[n++] as Chunk).rows
        const taken = chunks.slice(0, n)
        try {
          await this.ch.insert(
            `${this.o.database}.${table}`,
            taken.map((c) => c.text),
          )
        } catch (err) {
          if (!(err instanceof ClickHouseRefusal)) throw err
          // the server read the rows and refused them: sending them again would fail again
          chunks.splice(0, n)
          this.count -= rows
          this.lastError = err.message
          refused = true
          this.drop(rows, 'ClickHouse refused log rows: dropped')
          continue
        }
        chunks.splice(0, n)
        this.count -= rows
        this.written += rows
        reached = true
      }
    }
    // only an exchange with the server clears the error (an empty tick proves nothing)
    if (reached && !refused) {
      this.lastError = null
      this.droppedSinceOk = 0
    }
  }
}
