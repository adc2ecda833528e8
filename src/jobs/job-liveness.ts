import type { KV } from '@nats-io/kv'
import type { Member } from '../platform/heartbeat.ts'
import type { JobState } from './job-state.ts'
import type { WorkerState } from './worker-state.ts'

/**
 * Whether the worker a running job's state names is still executing it. A claim whose answer
 * was lost (NATS restarting) leaves a `running` state that nobody runs, even on a live worker, so
 * liveness alone is not enough: each beat lists the jobs the worker executes, and a job started
 * after the last beat is given the benefit of the doubt until the next one.
 */
export async function isStillRunning(w: WorkerState, s: JobState): Promise<boolean> {
  if (s.worker === null) return false
  if (s.worker === w.o.nodeId) return w.executing.has(s.id)
  return runsOnWorker(w.workers, w.heartbeatMs, s)
}

/** The same judgement from the heartbeats alone (WORKERS bucket), for a job of any worker. */
export async function runsOnWorker(workers: KV, heartbeatMs: number, s: JobState): Promise<boolean> {
  if (s.worker === null) return false
  const e = await workers.get(`${s.pool}.${s.worker}`).catch(() => null)
  if (e === null || e.operation !== 'PUT' || e.length === 0) return false
  const beat = e.json<Member>()
  const seen = Date.parse(beat.last_seen)
  // The bucket keeps a key 30 s after the last beat; three missed beats already mean dead.
  if (Date.now() - seen >= 3 * heartbeatMs) return false
  if (Array.isArray(beat.info['jobs']) && (beat.info['jobs'] as unknown[]).includes(s.id)) return true
  return Date.parse(s.started_at ?? '') >= seen - 1_000
}
