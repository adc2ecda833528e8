import { isTerminal, jobError, jobErrorOf, type JobState, type StateEntry } from './job-state.ts'
import { moveToDeadLetter } from './dead-letter.ts'
import { isStillRunning } from './job-liveness.ts'
import type { PulledMessage } from './puller.ts'
import { RETRYABLE, type WorkerState } from './worker-state.ts'

/** What a delivery's state allows: run it, or one of the reasons not to. */
type Verdict = 'claim' | 'skip' | 'busy' | 'lost-agent' | 'exhausted'

/** The state a fresh job's first claim creates (its first attempt, on this worker). */
export const firstClaim = (carried: JobState, nodeId: string): JobState => ({
  ...carried,
  status: 'running',
  attempts: 1,
  worker: nodeId,
  started_at: new Date().toISOString(),
  error: null,
})

/**
 * Claims a pulled job by CAS (queued → running) and answers the claimed entry to run, or null when
 * the delivery was settled instead (terminated, nak'ed for later, failed, or moved to the DLQ).
 * `first`: the state a first claim creates, when the caller made it already (`firstClaim`).
 */
export async function claimDelivery(
  w: WorkerState,
  m: PulledMessage,
  id: string,
  carried: JobState,
  first = firstClaim(carried, w.o.nodeId),
): Promise<StateEntry | null> {
  const { o } = w
  const rev = Number(m.headers?.get('Job-Rev') ?? '0')
  let claimed: StateEntry | null = null
  let cur: StateEntry | null
  if (rev === 0) {
    // First delivery of a fresh job: the claim creates the state entry. It exists already when
    // the job was cancelled while queued, or on a retry or redelivery: then judge what is there.
    const created = carried.status === 'queued' ? await o.store.create(first) : null
    if (created !== null) return { state: first, revision: created }
    cur = await o.store.get(id)
  } else {
    // Delayed jobs carry the revision of their `queued` entry: the claiming CAS below succeeds
    // without a read when nothing changed since.
    cur = { state: carried, revision: rev }
  }
  if (cur === null) {
    m.term()
    return null
  }
  let outcome: Verdict = 'skip'
  for (let i = 0; i < 50 && cur !== null && claimed === null; i++) {
    const s: JobState = cur.state
    outcome = await judge(w, s)
    if (outcome !== 'claim') break
    const next: JobState = {
      ...s,
      status: 'running',
      attempts: s.attempts + 1,
      worker: o.nodeId,
      started_at: new Date().toISOString(),
      error: null,
    }
    claimed = await o.store.transition(
      id,
      (now) => (now.status === s.status && now.attempts === s.attempts ? next : null),
      cur,
    )
    if (claimed === null) cur = await o.store.get(id)
  }
  if (cur === null || outcome === 'skip' || (outcome === 'claim' && claimed === null)) {
    m.term()
    return null
  }
  if (outcome === 'claim') return claimed
  await settleUnclaimed(w, m, id, cur, outcome)
  return null
}

async function judge(w: WorkerState, s: JobState): Promise<Verdict> {
  if (isTerminal(s.status) || s.status === 'scheduled') return 'skip'
  // Redelivered while its worker is alive (a NATS restart resets ack timers, a long GC pause):
  // taking it over would run it twice. Only a dead worker's job is taken over.
  if (s.status === 'running' && (await isStillRunning(w, s))) return 'busy'
  if (s.status === 'running' && !RETRYABLE.has(w.o.pool)) return 'lost-agent'
  if (s.attempts >= (s.max_attempts ?? w.maxAttempts)) return 'exhausted'
  return 'claim'
}

async function settleUnclaimed(
  w: WorkerState,
  m: PulledMessage,
  id: string,
  cur: StateEntry,
  outcome: 'busy' | 'lost-agent' | 'exhausted',
): Promise<void> {
  const { o, log } = w
  if (outcome === 'busy') {
    // Look again after an ack_wait; the running worker's ack removes the message meanwhile.
    m.nak(o.ackWaitMs)
    return
  }
  if (outcome === 'lost-agent') {
    const lost = jobError('job.worker_lost', 'worker lost during the run; agent jobs are not retried')
    const failed = await o.store.transition(
      id,
      (s) =>
        isTerminal(s.status) ? null : { ...s, status: 'failed', error: lost, finished_at: new Date().toISOString() },
      cur,
    )
    m.term()
    if (failed !== null)
      await o
        .onAbandoned?.(failed.state)
        .catch((err: unknown) => log.warn({ err, job: id }, 'reporting an abandoned job failed'))
    log.warn({ job: id }, 'agent job redelivered after its worker was lost: marked failed')
    return
  }
  await moveToDeadLetter(
    w,
    m,
    cur,
    jobErrorOf(cur.state.error) ?? jobError('job.worker_lost', 'worker lost during the last attempt'),
  )
}
