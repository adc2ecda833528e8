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
 * allows the collection owner's own functions, files/functions.ts). `execute` (own or all) is the
 * whole requirement: running a function is not reading its code, so a role may hand out one without
 * the other. A function that does not exist and one `p` may not run answer the same 404
 * (`resource.not_found`), so a caller learns nothing of functions it may not use.
 */
export async function executableFunction(
  resources: Pick<ResourceService, 'loadMany'>,
  p: Principal,
  namespace: string,
  name: string,
): Promise<FunctionRecord> {
  // the platform's own read (no `read` check): the execute permission below is the check
  const [fn] =
    namespace === '' || name === '' || name.includes('/')
      ? []
      : await resources.loadMany(functionKind, [`${namespace}/${name}`])
  if (
    fn === undefined ||
    !canOnResource(p, functionKind, 'execute', { namespace, name, ownerId: fn.owner_id ?? null })
  ) {
    throw notFound(`function ${namespace}/${name} not found`)
  }
  return fn
}

/** `executableFunction`, and active: 409 `function.inactive` for one switched off. */
export async function activeFunction(
  resources: Pick<ResourceService, 'loadMany'>,
  p: Principal,
  namespace: string,
  name: string,
): Promise<FunctionRecord> {
  const fn = await executableFunction(resources, p, namespace, name)
  if (fn.is_active === false) throw AppError.of('function.inactive', `function ${namespace}/${name} is not active`)
  return fn
}
