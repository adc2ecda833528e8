import { bind, type BoundRoute } from '../api/bind.ts'
import type { Principal } from '../auth/principal.ts'
import { permissionSet } from '../feature/permissions.ts'
import { invalid } from '../kernel/errors.ts'
import type { Config } from '../kernel/config.ts'
import type { Logger } from '../kernel/log.ts'
import type { Db } from '../platform/db.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { activeFunction } from '../kinds/function/executable.ts'
import type { JobService } from '../jobs/start.ts'
import type { ResourceRecord, ResourceService } from '../resources/service.ts'
import { disabledError } from '../../sandbox/executor.ts'
import { validateAgainst } from '../kernel/json-schema.ts'
import { validateCallbackUrl } from './callback.ts'
import { enqueueFunction, invokeFunction } from './invoke.ts'
import { FUNCTION_ROUTES as R } from './routes.ts'

/** The permissions this module checks, for the reference (its feature contributes the list). */
export const functionPermissions = permissionSet()

/*
 * POST /functions/{ns}/{name}/execute[/async]. Both run the function as a job of the `fn` pool:
 * the synchronous call enqueues a single-attempt job and waits on its done channel; the async call
 * answers 202 at once (retries and the DLQ apply). The caller needs the function's
 * execute permission (own or all); the job runs as the caller (no user override).
 */
functionPermissions.add('platform.functions/{namespace}/{name}.execute:own', 'Function: execute (own functions)')
functionPermissions.add('platform.functions/{namespace}/{name}.execute:all', 'Function: execute (any function)')

export interface FunctionHandlerDeps {
  db: Db
  nc: NatsConnection
  names: NatsNames
  config: Config
  resources: ResourceService
  jobs: JobService
  log: Logger
}

export function functionHandlers(d: FunctionHandlerDeps): BoundRoute[] {
  /** The function if the caller may execute it; 404 for anything the caller may not see or run. */
  const executable = async (
    p: Principal,
    { namespace, name }: { namespace: string; name: string },
  ): Promise<ResourceRecord> => {
    const fn = await activeFunction(d.resources, p, namespace, name)
    if (fn['shared_pool'] !== true && d.config.SANDBOX_EXECUTOR === 'disabled') throw disabledError()
    return fn
  }

  const checkInput = (fn: ResourceRecord, input: unknown) => {
    const issues = validateAgainst((fn['input_schema'] ?? {}) as Record<string, unknown>, input, '/input')
    if (issues.length > 0)
      throw invalid("input does not match the function's input_schema", issues, 'function.invalid_input')
  }

  const invokeDeps = {
    nc: d.nc,
    names: d.names,
    config: d.config,
    enqueue: d.jobs.enqueue,
    store: d.jobs.store,
    results: d.jobs.results,
  }

  return [
    bind(R.functionsExecute, async ({ principal: p, params, body }) => {
      const fn = await executable(p, params)
      checkInput(fn, body.input)
      const out = await invokeFunction(invokeDeps, p, fn, {
        input: body.input,
        ...(body.timeout === undefined ? {} : { timeoutS: body.timeout }),
      })
      return { status: 200, body: out.status === 'success' ? { ...out, error: null } : { ...out, result: null } }
    }),
    bind(R.functionsExecuteAsync, async ({ principal: p, params, body }) => {
      const fn = await executable(p, params)
      checkInput(fn, body.input)
      if (body.callback_url !== undefined && body.callback_url !== '')
        await validateCallbackUrl(body.callback_url, d.config)
      const job = await enqueueFunction(invokeDeps, p, fn, {
        input: body.input,
        sync: false,
        ...(body.trigger_id === undefined ? {} : { triggerId: body.trigger_id }),
        delay: body.delay_seconds ?? null,
        callbackUrl: body.callback_url === '' ? null : (body.callback_url ?? null),
      })
      return { status: 202, body: { execution_id: job.id, status: 'queued' } }
    }),
  ]
}
