import { jetstreamManager } from '@nats-io/jetstream'
import { conflict, notFound } from '../kernel/errors.ts'
import type { Db } from '../platform/db.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { announceCancel } from './cancel-notice.ts'
import { findQueuedJob, jobSubject } from './enqueue.ts'
import { isTerminal, type JobState, type JobStateStore } from './job-state.ts'
import { upsertExecution } from './mirror.ts'

/*
 * Cancelling one job, whoever asks (the admin's `POST /api/v1/queue/jobs/{id}/cancel`, a chat
 * owner's `POST /chats/{id}/cancel`): the state becomes `cancelled` by CAS (its republish on the
 * done channel unblocks the waiters), the cancel is announced so the worker running it aborts the
 * run (cancel-notice.ts), a message still waiting in JOBS is purged, and the execution row is
 * written at once rather than when the mirror gets to it. Permissions are the caller's business.
 */
export interface CancelDeps {
  nc: NatsConnection
  names: NatsNames
  db: Db
  store: JobStateStore
}

export interface CancelledJob {
  state: JobState
  /**
   * The job had not started (queued, or still a message in JOBS): no worker runs it, so nothing
   * the run would have done on its end (a chat turn's stream end, its chat told) happens unless
   * the caller does it.
   */
  waiting: boolean
}

/** Cancels job `id`; `job.not_found` (404) when there is none, `job.already_finished` (409) when it has ended. */
export async function cancelJob(d: CancelDeps, id: string): Promise<CancelledJob> {
  const cancel = (s: JobState): JobState => ({
    ...s,
    status: 'cancelled',
    error: 'cancelled',
    finished_at: new Date().toISOString(),
  })
  let done: { state: JobState; revision: number } | null = null
  let waiting = false
  let cur = await d.store.get(id)
  if (cur === null) {
    // Not claimed yet: create the entry as cancelled; if a worker claims it at this very moment,
    // one of the two creates loses and the CAS path below decides.
    const queued = await findQueuedJob(await jetstreamManager(d.nc), d.names, id)
    if (queued === null) throw notFound(`job ${id} not found`, 'job.not_found')
    const rev = await d.store.create(cancel(queued))
    if (rev !== null) done = { state: cancel(queued), revision: rev }
    else cur = await d.store.get(id)
    waiting = true
  }
  if (done === null && cur !== null) {
    waiting = cur.state.status === 'queued' || cur.state.status === 'scheduled'
    done = await d.store.transition(id, (s) => (isTerminal(s.status) ? null : cancel(s)), cur)
  }
  if (done === null) {
    const now = await d.store.get(id)
    throw conflict(`job already ${now?.state.status ?? 'gone'}`, 'job.already_finished')
  }
  // the worker that runs it (if one does) aborts the run (cancel-notice.ts)
  announceCancel(d.nc, d.names, id)
  if (waiting) {
    // Drop the waiting message so the backlog count is exact; a worker that already pulled it
    // skips it anyway because the state is terminal.
    const jsm = await jetstreamManager(d.nc)
    await jsm.streams
      .purge(d.names.stream('JOBS'), { filter: jobSubject(d.names, done.state.pool, id) })
      .catch(() => undefined)
  }
  await upsertExecution(d.db, done.state, done.revision, null)
  return { state: done.state, waiting }
}
