import { jetstream, type JsMsg } from '@nats-io/jetstream'
import { deliverCallback } from '../functions/callback.ts'
import type { Config } from '../kernel/config.ts'
import type { Logger } from '../kernel/log.ts'
import { sql, type Db } from '../platform/db.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { executionEvent, executionEventSubject } from './events.ts'
import { decodeState, isTerminal, type JobState } from './job-state.ts'
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
 */
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
    const s = decodeState(m.data)
    const rev = m.seq
    let output: unknown = s.status === 'completed' ? (s.result ?? null) : null
    if (s.status === 'completed' && s.result_stored === true) {
      const text = await o.results.get(s.id)
      output = text === null ? null : (JSON.parse(text) as unknown)
    }
    await upsertExecution(o.db, s, rev, output)
    if (s.callback_url !== null && isTerminal(s.status)) {
      const c = deliverCallback({ db: o.db, config: o.config, log }, s).catch((err: unknown) => log.error({ err, job: s.id }, 'execution callback failed'))
      callbacks.add(c)
      void c.finally(() => callbacks.delete(c))
    }
    if (s.dlq_seq !== undefined && s.status === 'failed') {
      await o.db.query(sql.unsafe`insert into dlq_entries (job_id, pool, seq, error, attempts) values (${s.id}::uuid, ${s.pool}, ${s.dlq_seq}, ${s.error}, ${s.attempts})
        on conflict (job_id) do nothing`)
    }
    const event = executionEvent(s, rev)
    await publishDurably(js, executionEventSubject(o.names, s), JSON.stringify(event), { msgID: `${s.id}:${String(rev)}` })
    m.ack()
  }

  const messages = await consumer.consume({ max_messages: limit * 2 })
  const loop = (async () => {
    for await (const m of messages) {
      if (stopped) break
      const p = apply(m).catch((err: unknown) => {
        log.warn({ err, seq: m.seq }, 'mirroring a job state failed; retrying shortly')
        m.nak(1_000)
      })
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
      ${s.trigger_id}, ${s.chat_id}, ${s.parent_id}::uuid, ${s.depth}, ${json(s.input)}::jsonb, ${json(output)}::jsonb, ${s.error}, ${s.worker},
      ${s.retry_of}::uuid, ${s.callback_url}, ${s.dlq_seq !== undefined}, ${rev}, ${s.created_at}::timestamptz, ${s.started_at}::timestamptz,
      ${s.finished_at}::timestamptz, now())
    on conflict (id) do update set status = excluded.status, attempts = excluded.attempts, output_data = excluded.output_data,
      error = excluded.error, worker = excluded.worker, in_dlq = excluded.in_dlq or executions.in_dlq, state_rev = excluded.state_rev,
      started_at = excluded.started_at, finished_at = excluded.finished_at, updated_at = now()
    where executions.state_rev < excluded.state_rev`)
}
