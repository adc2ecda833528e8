import { jetstream, type JsMsg } from '@nats-io/jetstream'
import { deliverCallback } from '../functions/callback.ts'
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
 * An ended execution with a callback_url gets its callback (functions/callback.ts) fired once the
 * row is written, off the mirror's path; the callback claims its row, so redelivery sends nothing twice.
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
const mayBeUnstorable = (json: string | Uint8Array): boolean => SUSPECT_ESCAPE.test(typeof json === 'string' ? json : textOf.decode(json))

export interface Mirror {
  stop(): Promise<void>
}

export async function startMirror(o: { nc: NatsConnection; names: NatsNames; db: Db; results: ResultStore; config: Config; log: Logger; concurrency?: number }): Promise<Mirror> {
  const js = jetstream(o.nc)
  const consumer = await js.consumers.get(`KV_${o.names.bucket('JOB_STATE')}`, MIRROR_CONSUMER)
  const log = o.log.child({ mod: 'job-mirror' })
  const limit = o.concurrency ?? 32
  const inflight = new Set<Promise<void>>()
  const callbacks = new Set<Promise<unknown>>()
  let stopped = false

  const apply = async (m: JsMsg): Promise<void> => {
    const op = m.headers?.get('KV-Operation') ?? ''
    if (op === 'DEL' || op === 'PURGE' || m.data.length === 0) {
      m.ack()
      return
    }
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
    const badResult = raw.status === 'completed' && (outputText === null ? suspect : mayBeUnstorable(outputText)) ? findUnstorable(output) : null
    let s = suspect ? (toStorable(raw) as JobState) : raw
    if (badResult !== null) {
      s = { ...s, status: 'failed', result: null, error: jobError('result.unstorable', `result.unstorable: the result contains ${badResult.reason} at ${badResult.path}`) }
      output = null
      log.warn({ job: s.id, error: s.error }, 'a job result Postgres cannot store: the execution is recorded as failed')
    }
    await upsertExecution(o.db, s, rev, output)
    if (s.callback_url !== null && isTerminal(s.status)) {
      const c = deliverCallback({ db: o.db, config: o.config, log }, s).catch((err: unknown) => log.error({ err, job: s.id }, 'execution callback failed'))
      callbacks.add(c)
      void c.finally(() => callbacks.delete(c))
    }
    if (s.dlq_seq !== undefined && s.status === 'failed') {
      await o.db.query(sql.unsafe`insert into dlq_entries (job_id, pool, seq, error, attempts) values (${s.id}::uuid, ${s.pool}, ${s.dlq_seq}, ${jobErrorText(s.error)}, ${s.attempts})
        on conflict (job_id) do nothing`)
    }
    const event = executionEvent(s, rev)
    await publishDurably(js, executionEventSubject(o.names, s), JSON.stringify(event), { msgID: `${s.id}:${String(rev)}` })
    m.ack()
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
    const timeOr = <T extends string | null>(v: string | null, fallback: T): string | T => (v !== null && !Number.isNaN(Date.parse(v)) ? v : fallback)
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
      error: jobError('mirror.failed', `mirror.failed: this job state could not be recorded after ${String(MIRROR_MAX_ATTEMPTS)} attempts: ${reason}`),
      finished_at: timeOr(s.finished_at, new Date().toISOString()),
    }
    try {
      await upsertExecution(o.db, failed, m.seq, null)
    } catch (again) {
      log.error({ err: again, seq: m.seq, job: s.id }, 'recording a poison job state as failed failed too; retrying later')
      m.nak(POISON_RETRY_MS)
      return
    }
    log.error({ err, seq: m.seq, job: s.id }, 'a job state failed to mirror repeatedly: the execution is recorded as failed')
    await publishDurably(js, executionEventSubject(o.names, failed), JSON.stringify(executionEvent(failed, m.seq)), { msgID: `${s.id}:${String(m.seq)}` }).catch(() => undefined)
    m.term()
  }

  const messages = await consumer.consume({ max_messages: limit * 2 })
  const loop = (async () => {
    for await (const m of messages) {
      if (stopped) break
      const p = apply(m).catch(async (err: unknown) => {
        // an outage is not poison: wait for the database instead of recording the job as failed
        if (isDatabaseUnavailable(err)) {
          log.warn({ seq: m.seq }, 'mirroring waits for the database')
          m.nak(2_000)
          return
        }
        if (m.info.deliveryCount >= MIRROR_MAX_ATTEMPTS) return giveUp(m, err)
        log.warn({ err, seq: m.seq, attempt: m.info.deliveryCount }, 'mirroring a job state failed; retrying shortly')
        m.nak(1_000)
      }).catch((err: unknown) => log.error({ err, seq: m.seq }, 'mirror failure handling failed'))
      inflight.add(p)
      void p.finally(() => inflight.delete(p))
      if (inflight.size >= limit) await Promise.race(inflight)
    }
  })()
  return {
    async stop() {
      stopped = true
      await messages.close()
      await loop.catch(() => undefined)
      await Promise.allSettled([...inflight])
      await Promise.allSettled([...callbacks])
    },
  }
}

export async function upsertExecution(db: Db, s: JobState, rev: number, output: unknown): Promise<void> {
  const json = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v))
  await db.query(sql.unsafe`
    insert into executions (id, pool, kind, namespace, name, user_id, status, attempts, trigger_type, trigger_id, chat_id, parent_id, depth,
      input_data, output_data, error, worker, retry_of, callback_url, in_dlq, state_rev, created_at, started_at, finished_at, updated_at)
    values (${s.id}::uuid, ${s.pool}, ${s.kind}, ${s.namespace}, ${s.name}, ${s.user_id}::uuid, ${s.status}, ${s.attempts}, ${s.trigger_type},
      ${s.trigger_id}, ${s.chat_id}, ${s.parent_id}::uuid, ${s.depth}, ${json(s.input)}::jsonb, ${json(output)}::jsonb, ${jobErrorText(s.error)}, ${s.worker},
      ${s.retry_of}::uuid, ${s.callback_url}, ${s.dlq_seq !== undefined}, ${rev}, ${s.created_at}::timestamptz, ${s.started_at}::timestamptz,
      ${s.finished_at}::timestamptz, now())
    on conflict (id) do update set status = excluded.status, attempts = excluded.attempts, output_data = excluded.output_data,
      error = excluded.error, worker = excluded.worker, in_dlq = excluded.in_dlq or executions.in_dlq, state_rev = excluded.state_rev,
      started_at = excluded.started_at, finished_at = excluded.finished_at, updated_at = now()
    where executions.state_rev < excluded.state_rev`)
}
