import { headers } from '@nats-io/transport-node'
import { claimDelivery, firstClaim } from './claim.ts'
import { encodeState, type JobState, type Pool } from './job-state.ts'
import type { PulledMessage } from './puller.ts'
import { runJob } from './run-job.ts'
import type { JobContext } from './worker.ts'
import type { WorkerState } from './worker-state.ts'

/*
 * A job started by this process itself, without the JOBS round trip (publish, PubAck, pull,
 * delivery): the chat actor starts its turn's agent job in a worker of its own process when one
 * has a free slot. The job is claimed by the same CAS as a pulled one (the state entry's create),
 * runs in that worker like a pulled one (timeout, cancel watch, listed in the worker's heartbeat,
 * outcome recorded by CAS) and is judged the same way when its entry exists already (running on a
 * live worker, abandoned by a dead one, or over). Only the message is missing: its settlement
 * tells what the claim found.
 */

/** What a local start found: claimed and running here; running on another live worker; over (ended, or abandoned and now failed); no free slot here. */
export type LocalStart = 'running' | 'elsewhere' | 'over' | 'full'

/** The local workers of this process, per pool (the workers role registers them; the actor host uses them). */
export interface LocalJobs {
  start(job: JobState): Promise<LocalStart>
}

/** Claims and starts `job` in this worker; resolves once the claim is decided (the run goes on). */
export async function startLocal(
  w: WorkerState,
  job: JobState,
  blocking: JobContext['blocking'],
): Promise<Exclude<LocalStart, 'full'>> {
  let settled: 'nak' | 'term' | null = null
  const h = headers()
  h.set('Job-Rev', '0')
  const m: PulledMessage = {
    subject: `jobs.${job.pool}.${job.id}`,
    data: encodeState(job),
    headers: h,
    deliveryCount: 1,
    ack: () => undefined,
    nak: () => {
      settled = 'nak'
    },
    term: () => {
      settled = 'term'
    },
    working: () => undefined,
  }
  // the slot is taken at once (a worker's free slots are counted synchronously), freed when the run ends
  let release = (): void => undefined
  const slot = new Promise<void>((resolve) => {
    release = resolve
  })
  w.running.add(slot)
  void slot.finally(() => w.running.delete(slot))
  // the executor's reads start now and overlap the claim's round trip
  const prefetched = w.o.executor.prefetch?.(job)
  if (w.o.executor.speculative === true && job.status === 'queued') {
    // the whole run starts now, its first visible effect waiting for the claim (run-job.ts)
    const state = firstClaim(job, w.o.nodeId)
    const decided = claimDelivery(w, m, job.id, job, state)
    void runJob(w, m, { state, decided }, blocking, prefetched)
      .catch((err: unknown) => w.log.error({ err, job: job.id }, 'local job failed'))
      .finally(release)
    if ((await decided) === null) return settled === 'nak' ? 'elsewhere' : 'over'
    return 'running'
  }
  let claimed
  try {
    claimed = await claimDelivery(w, m, job.id, job)
  } catch (err) {
    release()
    throw err
  }
  if (claimed === null) {
    release()
    return settled === 'nak' ? 'elsewhere' : 'over'
  }
  void runJob(w, m, claimed, blocking, prefetched)
    .catch((err: unknown) => w.log.error({ err, job: job.id }, 'local job failed'))
    .finally(release)
  return 'running'
}

/** The first worker of the job's pool with a free slot runs it; 'full' when none has one. */
export function localJobs(
  workers: readonly { pool: Pool; startLocal(job: JobState): Promise<LocalStart> | null }[],
): LocalJobs {
  return {
    async start(job) {
      for (const w of workers) {
        if (w.pool !== job.pool) continue
        const started = w.startLocal(job)
        if (started !== null) return started
      }
      return 'full'
    },
  }
}
