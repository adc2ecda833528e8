import { INLINE_RESULT_MAX_BYTES, type JobError, type JobState, type StateEntry } from './job-state.ts'
import { moveToDeadLetter } from './dead-letter.ts'
import type { PulledMessage } from './puller.ts'
import { announceJobEnd } from './wait.ts'
import { RETRYABLE, type WorkerState } from './worker-state.ts'

/** How an attempt's executor ended; `output`: what it printed (`JobContext.printed`), '' when nothing. */
export type AttemptOutcome = ({ ok: true; result: unknown } | { ok: false; reason: JobError }) & { output: string }

/**
 * Writes an attempt's outcome by CAS against the claim and settles its message: completed (ack),
 * failed (term), retry (nak with doubling backoff) or the DLQ. A job that is no longer this
 * attempt's (cancelled or flushed meanwhile) has its outcome discarded.
 */
export async function recordOutcome(
  w: WorkerState,
  m: PulledMessage,
  claimed: StateEntry,
  outcome: AttemptOutcome,
): Promise<void> {
  const { o, log } = w
  const job = claimed.state
  const attempt = job.attempts
  const mine = (s: JobState) => s.status === 'running' && s.worker === o.nodeId && s.attempts === attempt
  // the attempt's output goes with every state its outcome writes (none when it printed nothing)
  const printed: { output?: string } = outcome.output === '' ? {} : { output: outcome.output }
  if (outcome.ok) {
    const result = outcome.result
    const encoded = JSON.stringify(result ?? null)
    const large = Buffer.byteLength(encoded) > INLINE_RESULT_MAX_BYTES
    const finishedAt = new Date().toISOString()
    // A job whose result is a record of its own (a chat turn's reply, in Postgres already): a
    // waiter in this process has it now, while the job's record is written (wait.ts). It answers
    // what the job did, which a cancel arriving in between (the CAS then refuses) does not undo.
    if (
      o.executor.answersBeforeRecord === true ||
      (o.executor.answersSingleAttemptBeforeRecord === true && job.max_attempts === 1)
    )
      announceJobEnd({ ...job, status: 'completed', finished_at: finishedAt, result: result ?? null, ...printed })
    if (large) await o.results.put(job.id, encoded)
    // CAS against the claim's revision: no read on the hot path; a cancel in between makes it
    // fail, re-read, and refuse. A deferred claim's (revision 0) is the entry's create.
    const written = await o.store.transition(
      job.id,
      (s) =>
        mine(s)
          ? {
              ...s,
              status: 'completed',
              finished_at: finishedAt,
              ...(large ? { result_stored: true } : { result: result ?? null }),
              ...printed,
            }
          : null,
      claimed,
    )
    if (written === null)
      log.info({ job: job.id }, 'job finished after it was cancelled, flushed or already recorded: nothing to write')
    m.ack()
    return
  }
  const reason = outcome.reason
  // A deferred claim (revision 0) has no entry unless a cancel wrote one meanwhile: then it is that.
  const cur = (await o.store.get(job.id)) ?? (claimed.revision === 0 ? claimed : null)
  if (cur === null || !mine(cur.state)) {
    // cancelled or flushed meanwhile: the state already says how it ended
    m.term()
    return
  }
  // Never-retried jobs (agents; synchronous calls, whose caller gets the error) end `failed`
  // without a DLQ entry: there is nothing to retry later.
  if (!RETRYABLE.has(o.pool) || job.max_attempts === 1) {
    await o.store.transition(
      job.id,
      (s) =>
        mine(s) ? { ...s, status: 'failed', error: reason, finished_at: new Date().toISOString(), ...printed } : null,
      cur,
    )
    m.term()
  } else if (attempt < (job.max_attempts ?? w.maxAttempts)) {
    const back = await o.store.transition(
      job.id,
      (s) => (mine(s) ? { ...s, status: 'queued', error: reason, worker: null, ...printed } : null),
      cur,
    )
    if (back === null) m.term()
    else m.nak(o.retryDelayMs * 2 ** (attempt - 1))
    log.info({ job: job.id, attempt, err: reason.message, code: reason.code }, 'function job failed: retry scheduled')
  } else {
    await moveToDeadLetter(w, m, { ...cur, state: { ...cur.state, error: reason, ...printed } }, reason)
  }
}
