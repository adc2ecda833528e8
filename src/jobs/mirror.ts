import { jetstream, type JsMsg } from '@nats-io/jetstream'
import type { Config } from '../kernel/config.ts'
import type { Logger } from '../kernel/log.ts'
import { findUnstorable, toStorable, toStorableText } from '../kernel/storable-text.ts'
import { isDatabaseUnavailable, sql, type Db } from '../platform/db.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { executionEvent, executionEventSubject } from './events.ts'
import { decodeState, isTerminal, jobError, jobErrorText, type JobState } from './job-state.ts'
import { MIRROR_CONSUMER } from './provision.ts'
import { publishDurably } from './publish.ts'
import type { ResultStore } from './result-store.ts'

/*
 * Follows the JOB_STATE bucket's stream with the durable `pg-mirror` consumer and, per change:
 * upserts the execution row (only when the revision is newer, so redelivery and reordering are
 * harmless), indexes dead-lettered jobs, then publishes the public execution event. Every process
 * with the database runs it; the durable consumer shares the work and redelivers what a crashed
 * process did not ack. While it is down, the KV stream keeps the latest state per job, so it
 * catches up on restart (intermediate states of one job may then be coalesced).
 * Once the row of an ended job is written, the `onFinished` listeners are told, off the mirror's
 * path (the functions feature's execution callback is one: it claims its row, so redelivery sends
 * nothing twice). The job system knows nothing of what they do; the composition passes them in.
 * Text Postgres rejects (NUL, lone surrogates): a result holding it fails the execution
 * (`result.unstorable`), elsewhere it is replaced by U+FFFD. An entry that still fails
 * MIRROR_MAX_ATTEMPTS times is recorded as failed and dropped, so nothing is retried forever.
 */
/** Deliveries of one entry before it is treated as poison (the durable consumer counts them across restarts). */
export const MIRROR_MAX_ATTEMPTS = 5
const POISON_RETRY_MS = 30_000
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * A cheap pre-test on JSON text: JSON.stringify writes NUL as `\u0000` and a lone surrogate as
 * `\udXXX`, so text without those escapes needs no walk. (An escaped backslash before `u` is a
 * false positive; the walk then finds nothing.)
 */
const SUSPECT_ESCAPE = /\\u0000|\\ud[89a-f]/i
const textOf = new TextDecoder()
const mayBeUnstorable = (json: string | Uint8Array): boolean =>
  SUSPECT_ESCAPE.test(typeof json === 'string' ? json : textOf.decode(json))

/** Entries written with one statement at most. */
const MAX_BATCH = 64

interface Prepared {
  s: JobState
  rev: number
  output: unknown
}

/**
 * Told once a job's terminal state is in its row (at least once: a redelivered entry tells again).
 * A promise returned is awaited by `stop`; its failure is logged. Must not block: it runs off the
 * mirror's path.
 */
export type JobFinishedListener = (state: JobState) => Promise<unknown> | undefined

export interface Mirror {
  stop(): Promise<void>
}

export async function startMirror(o: {
  nc: NatsConnection
  names: NatsNames
  db: Db
  results: ResultStore
  config: Config
  log: Logger
  concurrency?: number
  onFinished?: readonly JobFinishedListener[]
}): Promise<Mirror> {
  const js = jetstream(o.nc)
  const consumer = await js.consumers.get(`KV_${o.names.bucket('JOB_STATE')}`, MIRROR_CONSUMER)
  const log = o.log.child({ mod: 'job-mirror' })
  const limit = o.concurrency ?? 32
  const lingerMs = o.config.MIRROR_LINGER_MS
  const inflight = new Set<Promise<void>>()
  const listening = new Set<Promise<unknown>>()
  const onFinished = o.onFinished ?? []
  let stopped = false

  /** The row one entry becomes (null: a deletion, nothing to write). */
  const prepare = async (m: JsMsg): Promise<Prepared | null> => {
    const op = m.headers?.get('KV-Operation') ?? ''
    if (op === 'DEL' || op === 'PURGE' || m.data.length === 0) return null
    const raw = decodeState(m.data)
    const rev = m.seq
    let output: unknown = raw.status === 'completed' ? (raw.result ?? null) : null
    let outputText: string | null = null
    if (raw.status === 'completed' && raw.result_stored === true) {
      outputText = await o.results.get(raw.id)
      output = outputText === null ? null : (JSON.parse(outputText) as unknown)
    }
    // A result Postgres cannot store fails the execution (it never answers success); any other
    // such text (an error message, the input) is stored with U+FFFD in its place.
    const suspect = mayBeUnstorable(m.data)
    const badResult =
      raw.status === 'completed' && (outputText === null ? suspect : mayBeUnstorable(outputText))
        ? findUnstorable(output)
        : null
    let s = suspect ? (toStorable(raw) as JobState) : raw
    if (badResult !== null) {
      s = {
        ...s,
        status: 'failed',
        result: null,
        error: jobError(
          'result.unstorable',
          `result.unstorable: the result contains ${badResult.reason} at ${badResult.path}`,
        ),
      }
      output = null
      log.warn({ job: s.id, error: s.error }, 'a job result Postgres cannot store: the execution is recorded as failed')
    }
    return { s, rev, output }
  }

  /** After the row is written: the finished listeners, the DLQ index, the public event, then the ack. */
  const finish = async (m: JsMsg, { s, rev }: Prepared): Promise<void> => {
    if (isTerminal(s.status)) {
      for (const listener of onFinished) {
        const told = listener(s)
        if (told === undefined) continue
        const c = told.catch((err: unknown) => log.error({ err, job: s.id }, 'a job-finished listener failed'))
        listening.add(c)
        void c.finally(() => listening.delete(c))
      }
    }
    if (s.dlq_seq !== undefined && s.status === 'failed') {
      await o.db
        .query(sql.unsafe`insert into dlq_entries (job_id, pool, seq, error, attempts) values (${s.id}::uuid, ${s.pool}, ${s.dlq_seq}, ${jobErrorText(s.error)}, ${s.attempts})
        on conflict (job_id) do nothing`)
    }
    const event = executionEvent(s, rev)
    await publishDurably(js, executionEventSubject(o.names, s), JSON.stringify(event), {
      msgID: `${s.id}:${String(rev)}`,
    })
    m.ack()
  }

  /** One entry on its own: the path of a batch that failed, so a bad entry is found and retried alone. */
  const apply = async (m: JsMsg): Promise<void> => {
    const p = await prepare(m)
    if (p === null) {
      m.ack()
      return
    }
    await upsertExecution(o.db, p.s, p.rev, p.output)
    await finish(m, p)
  }

  /**
   * The entries that arrived together, with one statement for all their rows (a busy platform
   * writes dozens of job states per millisecond: one round trip each was most of the mirror's
   * cost). The side effects follow per entry, in order. When anything of the batch fails, each
   * entry not yet acknowledged goes through `apply` on its own, with the usual retry and poison
   * handling: a batch never hides which entry was bad.
   */
  const applyBatch = async (batch: JsMsg[]): Promise<void> => {
    if (batch.length === 1) return guarded(batch[0] as JsMsg)
    const done = new Set<JsMsg>()
    try {
      const prepared = await Promise.all(batch.map(async (m) => ({ m, p: await prepare(m) })))
      await upsertExecutions(
        o.db,
        prepared.flatMap(({ p }) => (p === null ? [] : [p])),
      )
      await Promise.all(
        prepared.map(async ({ m, p }) => {
          if (p === null) m.ack()
          else await finish(m, p)
          done.add(m)
        }),
      )
    } catch (err) {
      log.debug({ err, entries: batch.length }, 'a mirror batch failed: its entries go one by one')
      await Promise.all(batch.filter((m) => !done.has(m)).map((m) => guarded(m)))
    }
  }

  /**
   * A poison entry (one that failed MIRROR_MAX_ATTEMPTS times): the execution is recorded as failed
   * with every text made storable, and the entry is dropped (term). Only when even that write fails
   * (Postgres unreachable) does the entry wait, POISON_RETRY_MS between tries, never 40 times a second.
   */
  const giveUp = async (m: JsMsg, err: unknown): Promise<void> => {
    const reason = toStorableText(err instanceof Error ? err.message : String(err)).slice(0, 2000)
    let s: JobState
    try {
      s = toStorable(decodeState(m.data)) as JobState
    } catch {
      log.error({ err, seq: m.seq }, 'an undecodable job state entry: dropped')
      m.term()
      return
    }
    // whatever made the row fail is unknown: columns with a cast get a value that always casts
    const uuidOrNull = (v: string | null) => (v !== null && UUID.test(v) ? v : null)
    const timeOr = <T extends string | null>(v: string | null, fallback: T): string | T =>
      v !== null && !Number.isNaN(Date.parse(v)) ? v : fallback
    const failed: JobState = {
      ...s,
      user_id: uuidOrNull(s.user_id),
      parent_id: uuidOrNull(s.parent_id),
      retry_of: uuidOrNull(s.retry_of),
      created_at: timeOr(s.created_at, new Date().toISOString()),
      started_at: timeOr(s.started_at, null),
      status: 'failed',
      result: null,
      result_stored: false,
      error: jobError(
        'mirror.failed',
        `mirror.failed: this job state could not be recorded after ${String(MIRROR_MAX_ATTEMPTS)} attempts: ${reason}`,
      ),
      finished_at: timeOr(s.finished_at, new Date().toISOString()),
    }
    try {
      await upsertExecution(o.db, failed, m.seq, null)
    } catch (again) {
      log.error(
        { err: again, seq: m.seq, job: s.id },
        'recording a poison job state as failed failed too; retrying later',
      )
      m.nak(POISON_RETRY_MS)
      return
    }
    log.error(
      { err, seq: m.seq, job: s.id },
      'a job state failed to mirror repeatedly: the execution is recorded as failed',
    )
    await publishDurably(js, executionEventSubject(o.names, failed), JSON.stringify(executionEvent(failed, m.seq)), {
      msgID: `${s.id}:${String(m.seq)}`,
    }).catch(() => undefined)
    m.term()
  }

  /** `apply` with the failure handling: an outage waits, a failure is retried, a poison entry is given up. */
  const guarded = (m: JsMsg): Promise<void> =>
    apply(m)
      .catch(async (err: unknown) => {
        // an outage is not poison: wait for the database instead of recording the job as failed
        if (isDatabaseUnavailable(err)) {
          log.warn({ seq: m.seq }, 'mirroring waits for the database')
          m.nak(2_000)
          return
        }
        if (m.info.deliveryCount >= MIRROR_MAX_ATTEMPTS) return giveUp(m, err)
        log.warn({ err, seq: m.seq, attempt: m.info.deliveryCount }, 'mirroring a job state failed; retrying shortly')
        m.nak(1_000)
      })
      .catch((err: unknown) => log.error({ err, seq: m.seq }, 'mirror failure handling failed'))

  // Entries are gathered while the previous batches are written: at most `limit` batches in
  // flight, each of what arrived meanwhile (at most MAX_BATCH). Redelivered entries (a retry)
  // always go alone, through `guarded`.
  const messages = await consumer.consume({ max_messages: Math.max(limit * 2, MAX_BATCH * 2) })
  let waiting: JsMsg[] = []
  let scheduled = false
  // The linger: an entry waits up to MIRROR_LINGER_MS for the ones after it, so a short job's
  // `running` and its end become one row write (only the newest state of a job is written; every
  // entry still gets its event, in order) and a moderately busy platform writes fuller batches.
  let linger: NodeJS.Timeout | undefined
  const flush = (): void => {
    scheduled = false
    if (linger !== undefined) {
      clearTimeout(linger)
      linger = undefined
    }
    while (waiting.length > 0 && inflight.size < limit) {
      const batch = waiting.splice(0, MAX_BATCH)
      const p = applyBatch(batch)
      inflight.add(p)
      void p.finally(() => {
        inflight.delete(p)
        if (waiting.length > 0 && !scheduled) {
          scheduled = true
          setImmediate(flush)
        }
      })
    }
  }
  const loop = (async () => {
    for await (const m of messages) {
      if (stopped) break
      if (m.info.deliveryCount > 1) {
        const p = guarded(m)
        inflight.add(p)
        void p.finally(() => inflight.delete(p))
      } else waiting.push(m)
      if (!scheduled) {
        scheduled = true
        if (lingerMs > 0 && waiting.length > 0 && waiting.length < MAX_BATCH) linger = setTimeout(flush, lingerMs)
        else setImmediate(flush)
      } else if (linger !== undefined && waiting.length >= MAX_BATCH) flush()
      while (inflight.size >= limit) await Promise.race(inflight)
    }
  })()
  return {
    async stop() {
      stopped = true
      clearTimeout(linger)
      await messages.close()
      await loop.catch(() => undefined)
      // what was gathered but not written yet is redelivered to the next mirror (not acked)
      waiting = []
      await Promise.allSettled([...inflight])
      await Promise.allSettled([...listening])
    },
  }
}

/** One entry's row: only when its revision is newer than the row's. */
export async function upsertExecution(db: Db, s: JobState, rev: number, output: unknown): Promise<void> {
  await upsertExecutions(db, [{ s, rev, output }])
}

/**
 * Several entries' rows in one statement. Postgres refuses to update one row twice in a statement,
 * so only each job's newest entry is written (the older ones would lose to it anyway: a row only
 * ever moves to a newer `state_rev`).
 */
export async function upsertExecutions(db: Db, entries: readonly Prepared[]): Promise<void> {
  const newest = new Map<string, Prepared>()
  for (const e of entries) {
    const seen = newest.get(e.s.id)
    if (seen === undefined || seen.rev < e.rev) newest.set(e.s.id, e)
  }
  if (newest.size === 0) return
  const rows = [...newest.values()].map(({ s, rev, output }) => ({
    id: s.id,
    pool: s.pool,
    kind: s.kind,
    namespace: s.namespace,
    name: s.name,
    user_id: s.user_id,
    status: s.status,
    attempts: s.attempts,
    trigger_type: s.trigger_type,
    trigger_id: s.trigger_id,
    chat_id: s.chat_id,
    parent_id: s.parent_id,
    depth: s.depth,
    input_data: s.input ?? null,
    output_data: output ?? null,
    output: s.output ?? null,
    error: jobErrorText(s.error),
    worker: s.worker,
    retry_of: s.retry_of,
    callback_url: s.callback_url,
    in_dlq: s.dlq_seq !== undefined,
    state_rev: rev,
    created_at: s.created_at,
    started_at: s.started_at,
    finished_at: s.finished_at,
  }))
  // a function whose statement's plan Postgres keeps per session (migrations/0021-executions-upsert-function.sql)
  await db.query(sql.unsafe`select executions_upsert(${JSON.stringify(rows)}::jsonb)`)
}
