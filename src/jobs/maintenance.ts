import { Type as T } from '@sinclair/typebox'
import type { Logger } from '../kernel/log.ts'
import { sql, type Db } from '../platform/db.ts'
import { anyRows, rowType } from '../platform/typed-rows.ts'
import { isTerminal, type JobStateStore } from './job-state.ts'

/*
 * The stuck-job flush: jobs running longer than STUCK_JOB_HOURS are cancelled. Dead
 * workers are normally handled much earlier by redelivery after ack_wait; this is the last resort
 * for a worker that is alive but hung. The cancel goes through the state CAS, so the bucket
 * republishes it on the done channel (waiters unblock) and `cancelled` announces it to the worker
 * running the job (cancel-notice.ts), which aborts the run; a job whose
 * state already expired is cancelled in Postgres directly.
 */
const StuckRow = rowType(T.Object({ id: T.String() }, { title: 'stuck execution' }))

export async function flushStuckJobs(
  db: Db,
  store: JobStateStore,
  hours: number,
  log: Logger,
  cancelled: (id: string) => void,
): Promise<{ flushed: number; job_ids: string[] }> {
  const rows = await anyRows(
    db,
    StuckRow,
    sql.unsafe`select id from executions where status = 'running' and started_at < now() - make_interval(secs => ${hours * 3600})`,
  )
  const ids: string[] = []
  const reason = `stuck: running for more than ${String(hours)} hours`
  for (const { id } of rows) {
    const cur = await store.get(id)
    if (cur !== null) {
      const done = await store.transition(
        id,
        (s) =>
          isTerminal(s.status)
            ? null
            : { ...s, status: 'cancelled', error: reason, finished_at: new Date().toISOString() },
        cur,
      )
      if (done === null) continue
      cancelled(id)
    }
    await db.query(sql.unsafe`update executions set status = 'cancelled', error = ${reason}, finished_at = now(), updated_at = now()
      where id = ${id}::uuid and status = 'running'`)
    ids.push(id)
  }
  if (ids.length > 0) log.warn({ flushed: ids.length }, 'stuck jobs cancelled')
  return { flushed: ids.length, job_ids: ids }
}
