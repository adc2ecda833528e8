import { Type as T } from '@sinclair/typebox'
import type { Logger } from '../kernel/log.ts'
import { sql, transaction, type Db } from '../platform/db.ts'
import { anyRows, rowType } from '../platform/typed-rows.ts'
import { publishJob, type EnqueueDeps } from './enqueue.ts'

/*
 * `delay_seconds` on NATS 2.9, which has no scheduled delivery (a `Nats-Schedule` header is
 * silently ignored and the message delivered at once): a Postgres timer row per
 * delayed job, dispatched once a second by every process with the database. `FOR UPDATE SKIP
 * LOCKED` lets replicas share the rows without double dispatch; the publish is deduped by job id
 * anyway, and a job cancelled while scheduled is simply not published.
 */
const DueTimerRow = rowType(T.Object({ job_id: T.String() }, { title: 'due job timer' }))

export function startTimerDispatcher(o: { db: Db; deps: EnqueueDeps; log: Logger; intervalMs?: number }): {
  stop(): Promise<void>
} {
  const log = o.log.child({ mod: 'job-timers' })
  let running: Promise<void> = Promise.resolve()
  let stopped = false
  const tick = async (): Promise<void> => {
    await transaction(o.db, async (tx) => {
      const due = await anyRows(
        tx,
        DueTimerRow,
        sql.unsafe`select job_id from job_timers where dispatched_at is null and due_at <= now()
        order by due_at limit 500 for update skip locked`,
      )
      for (const { job_id: id } of due) {
        const queued = await o.deps.store.transition(id, (s) =>
          s.status === 'scheduled' ? { ...s, status: 'queued' } : null,
        )
        if (queued !== null) await publishJob(o.deps, queued.state, queued.revision)
        await tx.query(sql.unsafe`update job_timers set dispatched_at = now() where job_id = ${id}::uuid`)
      }
    })
  }
  const timer = setInterval(() => {
    if (stopped) return
    running = running.then(tick).catch((err: unknown) => log.warn({ err }, 'timer dispatch failed; next tick retries'))
  }, o.intervalMs ?? 1_000)
  timer.unref()
  return {
    async stop() {
      stopped = true
      clearInterval(timer)
      await running
    },
  }
}
