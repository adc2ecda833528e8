import { issueExecutionToken } from '../auth/tokens.ts'
import type { Config } from '../kernel/config.ts'
import { findUnstorable } from '../kernel/storable-text.ts'
import { JobFailure } from '../jobs/job-state.ts'
import { functionKind } from '../kinds/function/kind.ts'
import type { ResourceService } from '../resources/service.ts'
import type { JobExecutor } from '../jobs/worker.ts'
import type { SandboxExecutor } from '../../sandbox/executor.ts'
import { validateAgainst } from '../kernel/json-schema.ts'
import type { FunctionJobMeta } from './invoke.ts'

/*
 * The `fn` pool's executor: loads the function's code (cached by id and version, so a warm call
 * reads no table), builds the context, runs it through the configured sandbox executor, checks the
 * output against output_schema. A function error becomes a job failure (retried for async jobs)
 * carrying `{code, type, message}`: `function.timeout` when the sandbox's time limit
 * stopped it, `function.error` otherwise, with the Python exception type as `type`.
 */
interface CodeEntry {
  code: string
  entrypoint: string
  outputSchema: Record<string, unknown>
  sharedPool: boolean
  version: number
}

const MAX_CACHED = 500

export function functionJobExecutor(d: {
  resources: Pick<ResourceService, 'byId'>
  config: Config
  sandboxes: SandboxExecutor
}): JobExecutor {
  const cache = new Map<string, CodeEntry>()

  const load = async (id: string, version: number): Promise<CodeEntry> => {
    const hit = cache.get(`${id}:${String(version)}`)
    if (hit !== undefined) return hit
    const fn = await d.resources.byId(functionKind, id)
    if (fn === null) throw new JobFailure('function.not_found', 'the function was deleted', 'FunctionNotFound')
    const entry: CodeEntry = {
      code: fn.code,
      entrypoint: fn.entrypoint,
      outputSchema: fn.output_schema,
      sharedPool: fn.shared_pool === true,
      version: Number(fn.version),
    }
    if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value as string)
    // cached under the version asked for too: the same job retried must not read again
    cache.set(`${id}:${String(version)}`, entry)
    cache.set(`${id}:${String(entry.version)}`, entry)
    return entry
  }

  /*
   * The token user code gets: bound to this attempt of this job (refused once it is no longer
   * running), limited to EXECUTION_SCOPE, and living no longer than the execution's time limit
   * and FUNCTION_TOKEN_MAX_MINUTES, whichever is shorter; nothing the function's owner sets can
   * lengthen it.
   */
  const tokenFor = (
    job: { id: string; user_id: string | null },
    attempt: number,
    email: string,
    timeoutS: number,
  ): Promise<string> | null =>
    job.user_id === null
      ? null
      : issueExecutionToken(
          d.config.SECRET_KEY,
          { sub: job.user_id, email, executionId: job.id, attempt },
          Math.min(d.config.FUNCTION_TOKEN_MAX_MINUTES, Math.ceil(timeoutS / 60) + 1),
        )

  const run: JobExecutor = async ({ job, attempt, signal, printed }) => {
    const meta = (job.meta ?? {}) as Partial<FunctionJobMeta> & { timeout_s?: number }
    if (typeof meta.function_id !== 'string')
      throw new JobFailure('job.invalid', 'a function job without its function id', 'BadJob')
    const fn = await load(meta.function_id, Number(meta.version ?? 0))
    // a job enqueued before FUNCTION_TIMEOUT was lowered still obeys the ceiling
    const timeoutS = Math.min(meta.timeout_s ?? d.config.FUNCTION_TIMEOUT, d.config.FUNCTION_TIMEOUT)
    const context: Record<string, unknown> = {
      user_id: job.user_id,
      user_email: meta.user_email ?? null,
      access_token: await tokenFor(job, attempt, meta.user_email ?? '', timeoutS),
      execution_id: job.id,
      trigger_type: job.trigger_type,
      trigger_id: job.trigger_id,
      chat_id: job.chat_id,
      function: { namespace: job.namespace, name: job.name },
    }
    const outcome = await d.sandboxes.run(
      {
        code: fn.code,
        entrypoint: fn.entrypoint,
        input: job.input,
        context,
        timeoutMs: timeoutS * 1000,
        name: `${job.namespace}/${job.name}`,
      },
      // a cancel (or the job's time limit) kills the sandbox, which frees its place in the pool
      { trusted: fn.sharedPool, signal },
    )
    // Postgres text refuses NUL (the execution record keeps the output): shown as U+FFFD instead
    printed(outcome.output.replaceAll('\u0000', '\uFFFD'))
    if (!outcome.ok) {
      const tb = outcome.error.traceback === '' ? '' : `\n${outcome.error.traceback}`
      const code = outcome.timedOut ? 'function.timeout' : 'function.error'
      throw new JobFailure(
        code,
        `${outcome.error.message}${tb}`.slice(0, Math.max(0, 8000 - outcome.error.type.length - 2)),
        outcome.error.type,
      )
    }
    const issues = validateAgainst(fn.outputSchema, outcome.result, '/output')
    if (issues.length > 0)
      throw new JobFailure(
        'function.output_invalid',
        `the result does not match output_schema: ${issues.map((i) => `${i.path} ${i.message}`).join('; ')}`,
        'OutputValidationError',
      )
    // Postgres rejects NUL and lone surrogates: such a result fails here, never answers success
    const unstorable = findUnstorable(outcome.result)
    if (unstorable !== null)
      throw new JobFailure(
        'result.unstorable',
        `result.unstorable: the result contains ${unstorable.reason} at ${unstorable.path}`,
      )
    return outcome.result
  }
  // a synchronous call (single attempt) answers its caller before the completion is written
  run.answersSingleAttemptBeforeRecord = true
  return run
}
