import type { Static } from '@sinclair/typebox'
import type { FunctionSpec } from '../../../schemas/function.ts'
import type { Principal } from '../../auth/principal.ts'
import { AppError, notFound } from '../../kernel/errors.ts'
import { canOnResource } from '../../resources/permissions.ts'
import type { ResourceRecord, ResourceService } from '../../resources/service.ts'
import { functionKind } from './kind.ts'

export type FunctionRecord = ResourceRecord<Static<typeof FunctionSpec>>

/**
 * The function `namespace/name` if `p` may execute it now: the one check every path that runs a
 * function as a principal makes at execution time (the execute endpoint, schedules, database
 * triggers, webhooks, agent tools and hooks, component proxies; a collection's upload filter also
 * allows the collection owner's own functions, files/functions.ts). A function `p` cannot see and one
 * it may see but not run answer the same 404 (`resource.not_found`), so a caller learns nothing of
 * functions it may not use.
 */
export async function executableFunction(resources: Pick<ResourceService, 'get'>, p: Principal, namespace: string, name: string): Promise<FunctionRecord> {
  const fn = await resources.get(p, functionKind, { namespace, name }).catch((err: unknown) => {
    if (err instanceof AppError && err.status === 404) return null
    throw err
  })
  if (fn === null || !canOnResource(p, functionKind, 'execute', { namespace, name, ownerId: fn.owner_id ?? null })) {
    throw notFound(`function ${namespace}/${name} not found`)
  }
  return fn
}

/** `executableFunction`, and active: 409 `function.inactive` for one switched off. */
export async function activeFunction(resources: Pick<ResourceService, 'get'>, p: Principal, namespace: string, name: string): Promise<FunctionRecord> {
  const fn = await executableFunction(resources, p, namespace, name)
  if (fn.is_active === false) throw AppError.of('function.inactive', `function ${namespace}/${name} is not active`)
  return fn
}
