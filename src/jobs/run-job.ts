import { startSpan, tracing, type TraceSpan } from '../platform/tracing.ts'
import { JobFailure, toJobError, type JobState, type StateEntry } from './job-state.ts'
import type { PulledMessage } from './puller.ts'
import { recordOutcome, type AttemptOutcome } from './record-outcome.ts'
import type { JobContext } from './worker.ts'
import type { WorkerState } from './worker-state.ts'

/**
 * An attempt started while its claim is still being written (a speculative executor's, see
 * `JobExecutor.speculative`): `state` is what the claim writes, `decided` the claimed entry, or
 * null when the claim found the job not to run (the delivery is settled then).
 */
export interface PendingClaim {
  state: JobState
  decided: Promise<StateEntry | null>
}

/** The claim refused a job its executor had started on speculation: the run stops, nothing is recorded. */
export class NotClaimed extends Error {
  constructor(id: string) {
    super(`job ${id} was not claimed by this worker`)
    this.name = 'NotClaimed'
  }
}

/**
 * Runs one claimed attempt (or one whose claim is deferred: a `StateEntry` at revision 0): the
 * executor with a cancel signal (the job's done channel) and a timeout, the message kept alive
 * with `working()`; then records the outcome after the slot is free.
 * With a pending claim the executor starts at once and gets `claimed` to wait on before its first
 * effect; a refused (or failed) claim aborts it and leaves nothing to record.
 */
export async function runJob(
  w: WorkerState,
  m: PulledMessage,
  claimed: StateEntry | PendingClaim,
  blocking: JobContext['blocking'],
  prefetched?: unknown,
): Promise<void> {
  const { o, log } = w
  const pending = 'decided' in claimed ? claimed.decided : null
  const job = claimed.state
  const attempt = job.attempts
  w.executing.add(job.id)
  const ac = new AbortController()
  // A cancel (the endpoint, the stuck-job flush) is announced to the worker process, which aborts
  // the run here (cancel-notice.ts). The abort stops agent turns early and kills a function's
  // sandbox (the pool destroys it instead of waiting for the run to end: a cancelled run must not
  // keep its sandbox; where a cancel otherwise lets running work finish, see
  // sandbox/README.md).
  w.aborts.set(job.id, ac)
  const keepAlive = setInterval(() => m.working(), Math.max(500, Math.floor(o.ackWaitMs / 3)))
  const timeoutMs = job.timeout_ms ?? o.timeoutMs
  const timeout = setTimeout(
    () => ac.abort(new JobFailure('job.timeout', `timed out after ${String(Math.round(timeoutMs / 1000))} s`)),
    timeoutMs,
  )
  const gate =
    pending === null
      ? undefined
      : pending.then((c) => {
          if (c === null) throw new NotClaimed(job.id)
          return undefined
        })
  gate?.catch((err: unknown) => ac.abort(err instanceof NotClaimed ? err : new NotClaimed(job.id)))
  // A deferred claim (revision 0: running before anything was written, job-slots.ts) is written
  // only if the run lasts `runningRecordMs`; a run that ends sooner is recorded once, at its end.
  // A create that finds the entry written (a cancel's, or a redelivery's claim) stops the run.
  let entry: StateEntry | null = pending === null ? (claimed as StateEntry) : null
  let claiming: Promise<void> | undefined
  const writeClaim = async (): Promise<void> => {
    try {
      const revision = await o.store.create(job)
      if (revision === null) ac.abort(new NotClaimed(job.id))
      else entry = { state: job, revision }
    } catch (err) {
      log.warn({ err, job: job.id }, "writing a running job's claim failed: its outcome creates the entry")
    }
  }
  const deferred = entry?.revision === 0 ? setTimeout(() => (claiming = writeClaim()), o.runningRecordMs) : undefined
  // Only the executor's own error is a job failure. An error after it succeeded (NATS
  // unreachable while recording the result) must not turn into a retry that runs the job again:
  // the store retries through outages, and a write that still fails leaves the message unacked
  // so the next delivery finds the state and judges it.
  let outcome: AttemptOutcome
  // the run's span (tracing on): a child of the span that asked for the job (its record's traceparent)
  const span: TraceSpan | undefined = tracing.on ? startSpan(`job ${job.pool}`, jobSpan(job, attempt)) : undefined
  let output = ''
  const execute = () =>
    o.executor({
      job,
      attempt,
      signal: ac.signal,
      log: log.child({ job: job.id, attempt }),
      blocking,
      printed: (text) => {
        output = text
      },
      ...(prefetched === undefined ? {} : { prefetched }),
      ...(gate === undefined ? {} : { claimed: gate }),
    })
  try {
    const result = await Promise.race([
      span === undefined ? execute() : span.run(execute),
      new Promise<never>((_, reject) =>
        ac.signal.addEventListener('abort', () => reject(ac.signal.reason as Error), { once: true }),
      ),
    ])
    outcome = { ok: true, result, output }
  } catch (err) {
    outcome = { ok: false, reason: toJobError(err), output }
    span?.fail(err)
  }
  span?.end()
  // Recording the outcome runs after the slot is free again: the next job is pulled while the
  // state write and the ack are in flight (at most `concurrency` of them, so ack_pending stays
  // within twice the slots). The message stays alive (`working()`) until it is acked.
  const done: Promise<void> = (async () => {
    try {
      clearTimeout(deferred)
      await claiming
      // the claim's own failure was the caller's to report (`startLocal` throws it)
      if (pending !== null) entry = await pending.catch(() => null)
      if (entry !== null) await recordOutcome(w, m, entry, outcome)
    } finally {
      w.executing.delete(job.id)
      clearInterval(keepAlive)
      clearTimeout(timeout)
      w.aborts.delete(job.id)
    }
  })().catch((err: unknown) => {
    // Left unacked: the message comes back after ack_wait and its state is judged again.
    log.error({ err, job: job.id }, 'recording a job outcome failed')
  })
  w.finishing.add(done)
  void done.finally(() => w.finishing.delete(done))
  if (w.finishing.size >= o.concurrency) await Promise.race(w.finishing)
}

/** The span of a job's attempt: CONSUMER, under the job's traceparent. */
const jobSpan = (job: JobState, attempt: number) =>
  ({
    kind: 'consumer',
    parent: job.traceparent,
    attributes: {
      'job.id': job.id,
      'job.pool': job.pool,
      'job.kind': job.kind,
      'job.target': `${job.namespace}/${job.name}`,
      'job.attempt': attempt,
    },
  }) as const
