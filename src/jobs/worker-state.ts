import type { JetStreamClient } from '@nats-io/jetstream'
import type { KV } from '@nats-io/kv'
import type { Logger } from '../kernel/log.ts'
import type { Pool } from './job-state.ts'
import type { Puller } from './puller.ts'
import type { WorkerOptions } from './worker.ts'

/** Pools whose jobs are retried (functions); agent and sub-agent jobs never are. */
export const RETRYABLE: ReadonlySet<Pool> = new Set(['fn'])

/**
 * What one pool worker (worker.ts) shares between its slot loops, its claims and its runs: the
 * options, the clients, and the sets that say what it executes now.
 */
export interface WorkerState {
  readonly o: WorkerOptions
  readonly js: JetStreamClient
  readonly log: Logger
  readonly puller: Puller
  /** The heartbeat bucket (liveness of the other workers of the pool). */
  readonly workers: KV
  readonly heartbeatMs: number
  /** Attempts of a job that does not carry its own `max_attempts`. */
  readonly maxAttempts: number
  /** Handlings in progress (a slot's current message). */
  readonly running: Set<Promise<void>>
  /** Ids of the jobs this worker executes now (listed in its heartbeat). */
  readonly executing: Set<string>
  /** The abort of each run, by job id: fired by an announced cancel (cancel-notice.ts). */
  readonly aborts: Map<string, AbortController>
  /**
   * Jobs announced cancelled in the last minute that this worker did not run then (by id, when
   * heard): a deferred claim (job-slots.ts) writes nothing before its run, so a delivery that
   * crossed its cancel on the way is recognised here instead of by a failed create.
   */
  readonly cancelled: Map<string, number>
  /** Outcomes being recorded after their slot was freed. */
  readonly finishing: Set<Promise<void>>
  stopping: boolean
}

/** How long a heard cancel is remembered for a delivery that may still be on its way. */
const CANCEL_MEMORY_MS = 60_000

/** Remembers an announced cancel of a job this worker does not run (yet); forgets those over a minute old. */
export function rememberCancel(cancelled: Map<string, number>, id: string, now = Date.now()): void {
  for (const [k, at] of cancelled) {
    // insertion order is time order: the first young entry ends the sweep
    if (now - at < CANCEL_MEMORY_MS) break
    cancelled.delete(k)
  }
  cancelled.delete(id)
  cancelled.set(id, now)
}
