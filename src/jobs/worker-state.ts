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
  /** Outcomes being recorded after their slot was freed. */
  readonly finishing: Set<Promise<void>>
  stopping: boolean
}
