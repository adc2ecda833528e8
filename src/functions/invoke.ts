import { randomUUID } from 'node:crypto'
import type { Principal } from '../auth/principal.ts'
import type { Config } from '../kernel/config.ts'
import { enqueueJob } from '../jobs/enqueue.ts'
import { jobErrorOf, jobErrorText, type JobState } from '../jobs/job-state.ts'
import { waitForJob, watchJob } from '../jobs/wait.ts'
import type { ResourceRecord } from '../resources/service.ts'
import type { InvokeDeps } from '../feature/invoke-deps.ts'

/** What a function job carries besides its input (read back by the `fn` pool's executor, job-executor.ts). */
export interface FunctionJobMeta {
  function_id: string
  version: number
  user_email: string
  shared_pool: boolean
}

/*
 * Running a function as a job of the `fn` pool: the one path used by the execute endpoints, agent
 * tool calls and message hooks. The caller has already checked the execute permission and the
 * input; the job runs as the principal.
 */

export interface InvokeOptions {
  input: unknown
  /** Seconds; at most the function's own timeout. */
  timeoutS?: number
  sync: boolean
  triggerType?: string
  triggerId?: string
  chatId?: string | null
  parent?: { id: string; depth: number } | null
  delay?: number | null
  callbackUrl?: string | null
  /** A job id chosen by the caller (a schedule tick's, so a repeated enqueue is one job). */
  id?: string
  /** `id` was drawn just now for this job (see EnqueueRequest.fresh). */
  fresh?: boolean
}

/**
 * Seconds an execution may run: the function's own `timeout` (or FUNCTION_TIMEOUT when unset), a
 * caller's shorter ask, never more than FUNCTION_TIMEOUT. Clamped at run time rather than refused
 * on save, so lowering FUNCTION_TIMEOUT also bounds functions saved before.
 */
export function functionTimeout(config: Config, fn: ResourceRecord, asked?: number): number {
  const own =
    typeof fn['timeout'] === 'number' ? Math.min(fn['timeout'], config.FUNCTION_TIMEOUT) : config.FUNCTION_TIMEOUT
  return Math.max(1, Math.min(own, asked ?? own))
}

export function enqueueFunction(
  d: Pick<InvokeDeps, 'config' | 'enqueue'>,
  p: Principal,
  fn: ResourceRecord,
  o: InvokeOptions,
): Promise<JobState> {
  const timeoutS = functionTimeout(d.config, fn, o.timeoutS)
  const meta: FunctionJobMeta = {
    function_id: fn.id,
    version: Number(fn['version']),
    user_email: p.email,
    shared_pool: fn['shared_pool'] === true,
  }
  return enqueueJob(d.enqueue, {
    ...(o.id === undefined ? {} : { id: o.id }),
    ...(o.fresh === true ? { fresh: true } : {}),
    pool: 'fn',
    kind: 'function',
    namespace: String(fn['namespace']),
    name: fn.name,
    input: o.input,
    userId: p.userId,
    triggerType: o.triggerType ?? 'api',
    ...(o.triggerId === undefined ? {} : { triggerId: o.triggerId }),
    chatId: o.chatId ?? null,
    parent: o.parent ?? null,
    delaySeconds: o.delay ?? null,
    callbackUrl: o.callbackUrl ?? null,
    timeoutMs: timeoutS * 1000 + 5_000,
    meta: { ...meta, timeout_s: timeoutS },
    ...(o.sync ? { maxAttempts: 1 } : {}),
  })
}

/** `output`: what the function printed (absent when nothing); `duration_ms`: its run, start to end. */
export type InvokeOutcome = (
  | { status: 'success'; execution_id: string; result: unknown }
  | { status: 'error' | 'timeout'; execution_id: string; error: string }
) & { output?: string; duration_ms?: number }

/** What an ended run adds to its answer: its output and how long it ran. */
function runFacts(done: JobState): { output?: string; duration_ms?: number } {
  const started = Date.parse(done.started_at ?? '')
  const finished = Date.parse(done.finished_at ?? '')
  return {
    ...(done.output === undefined ? {} : { output: done.output }),
    ...(Number.isNaN(started) || Number.isNaN(finished) ? {} : { duration_ms: Math.max(0, finished - started) }),
  }
}

/** Enqueues a single-attempt execution and waits for its end. */
export async function invokeFunction(
  d: InvokeDeps,
  p: Principal,
  fn: ResourceRecord,
  o: Omit<InvokeOptions, 'sync' | 'delay' | 'callbackUrl'>,
): Promise<InvokeOutcome> {
  const timeoutS = functionTimeout(d.config, fn, o.timeoutS)
  const waitMs = timeoutS * 1000 + 30_000
  let done: JobState | null
  let job: JobState
  if (o.id === undefined) {
    // A fresh id: the waiter subscribes before the job exists (on the connection that publishes
    // it), so its end cannot be missed and no flush or state read is needed (two round trips
    // fewer than waitForJob, which a caller's id needs: that job may have ended already).
    const id = randomUUID()
    const watch = watchJob(d.nc, d.names, d.store, id)
    try {
      job = await enqueueFunction(d, p, fn, { ...o, id, fresh: true, sync: true })
    } catch (err) {
      watch.stop()
      throw err
    }
    done = await watch.result(waitMs)
  } else {
    job = await enqueueFunction(d, p, fn, { ...o, sync: true })
    done = await waitForJob(d.nc, d.names, d.store, job.id, waitMs)
  }
  if (done === null || (done.status !== 'completed' && done.status !== 'failed' && done.status !== 'cancelled')) {
    return {
      status: 'timeout',
      execution_id: job.id,
      error: `no result within ${String(timeoutS)} s; the execution goes on: GET /executions/${job.id}`,
    }
  }
  if (done.status === 'completed') {
    let result: unknown = done.result ?? null
    if (done.result_stored === true) {
      const text = await d.results.get(job.id)
      result = text === null ? null : (JSON.parse(text) as unknown)
    }
    return { status: 'success', execution_id: job.id, result, ...runFacts(done) }
  }
  // decided on the error's code: the sandbox's time limit (`function.timeout`) or the job's (`job.timeout`)
  const code = jobErrorOf(done.error)?.code
  const timedOut = code === 'function.timeout' || code === 'job.timeout'
  return {
    status: timedOut ? 'timeout' : 'error',
    execution_id: job.id,
    error: jobErrorText(done.error) ?? done.status,
    ...runFacts(done),
  }
}
