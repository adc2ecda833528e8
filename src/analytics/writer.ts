import type { Logger } from '../kernel/log.ts'
import type { ClickHouseHttp } from './clickhouse-http.ts'
import { EXECUTION_LOGS, REQUEST_LOGS, setupTables, sweepPartitions, type Setup } from './tables.ts'

/*
 * The analytics writer of a resources process: log rows arrive (request-log batches from the
 * gateways, execution records from the job events), wait in one bounded buffer, and go to
 * ClickHouse every `flushMs` as one JSONEachRow insert per table. Nothing that adds rows ever
 * waits on ClickHouse. While ClickHouse is down or slow the rows stay (inserts retried on the
 * next tick) up to `capacity` records in all; beyond that new rows are dropped and counted, and
 * the health view (`analyticsHealth`) says so with the last error.
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

export class AnalyticsWriter {
  private readonly held: Record<Table, object[]> = { [REQUEST_LOGS]: [], [EXECUTION_LOGS]: [] }
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

  /** Takes rows for `table`; what does not fit in the buffer is dropped and counted. Never waits. */
  add(table: Table, rows: readonly object[]): void {
    const room = Math.max(0, this.o.capacity - this.count)
    const taken = rows.length <= room ? rows : rows.slice(0, room)
    if (taken.length > 0) {
      this.held[table].push(...taken)
      this.count += taken.length
    }
    const lost = rows.length - taken.length
    if (lost > 0) {
      if (this.dropped === 0 || this.droppedSinceOk === 0)
        this.log.warn(
          { capacity: this.o.capacity, lastError: this.lastError },
          'analytics buffer full: dropping log rows',
        )
      this.dropped += lost
      this.droppedSinceOk += lost
      this.changed()
    }
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
    if (this.setup === null) {
      this.setup = await setupTables(this.ch, this.o.database, this.o.retentionDays)
      this.log.info(
        { version: this.setup.version, retention: this.setup.ttl ? 'table TTL' : 'hourly partition sweep' },
        'analytics tables ready',
      )
    }
    if (!this.setup.ttl && Date.now() - this.lastSweep >= (this.o.sweepMs ?? 3_600_000)) {
      const dropped = await sweepPartitions(this.ch, this.o.database, this.o.retentionDays)
      this.lastSweep = Date.now()
      if (dropped.length > 0) this.log.info({ partitions: dropped }, 'analytics retention: old partitions dropped')
    }
    const max = this.o.maxInsertRows ?? 10_000
    for (const table of [REQUEST_LOGS, EXECUTION_LOGS] as const) {
      const rows = this.held[table]
      while (rows.length > 0) {
        const batch = rows.slice(0, max)
        await this.ch.insert(`${this.o.database}.${table}`, batch)
        rows.splice(0, batch.length)
        this.count -= batch.length
        this.written += batch.length
      }
    }
    this.lastError = null
    this.droppedSinceOk = 0
  }
}
