import type { Pool } from './job-state.ts'
import type { JobExecutor } from './worker.ts'

/*
 * What each pool runs. The function executor (sandboxes) and the agent executors (LLM turns)
 * register here in their own modules; a pool without an executor starts no workers, so its jobs
 * wait in the stream (nothing is lost) until a process that can run them joins.
 */
const registry: Partial<Record<Pool, JobExecutor>> = {}

export function registerJobExecutor(pool: Pool, executor: JobExecutor): void {
  registry[pool] = executor
}

export function jobExecutors(): Partial<Record<Pool, JobExecutor>> {
  return { ...registry }
}
