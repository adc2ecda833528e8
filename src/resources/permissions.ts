import type { Principal } from '../auth/principal.ts'
import { can } from '../auth/principal.ts'
import type { AnyKind } from './kind.ts'

/*
 * Resource permissions derived from the kind: `platform.<plural>/<ns>/<name>.<action>:<scope>`
 * (`platform.<plural>/<name>...` for named kinds). Admin-only kinds need the `:all` scope; other
 * kinds accept `:own` for resources the principal owns.
 */
export type ResourceAction = 'create' | 'read' | 'update' | 'delete' | 'execute' | 'chat'

export interface ResourceMeta {
  namespace: string
  name: string
  ownerId: string | null
}

export function resourcePermission(
  kind: AnyKind,
  action: string,
  meta: Pick<ResourceMeta, 'namespace' | 'name'>,
  scope: 'own' | 'all',
): string {
  const path = kind.addressing === 'namespaced' ? `${meta.namespace}/${meta.name}` : meta.name
  return `platform.${kind.plural}/${path}.${action}:${scope}`
}

export function canOnResource(p: Principal, kind: AnyKind, action: string, meta: ResourceMeta): boolean {
  if (can(p, resourcePermission(kind, action, meta, 'all'))) return true
  if (kind.adminOnly) return false
  const owns = action === 'create' || (meta.ownerId !== null && meta.ownerId === p.userId)
  return owns && can(p, resourcePermission(kind, action, meta, 'own'))
}

/** Every permission string the engine checks for a kind, for the permissions reference. */
export function kindPermissions(kind: AnyKind): string[] {
  const path = kind.addressing === 'namespaced' ? '{namespace}/{name}' : '{name}'
  const scopes = kind.adminOnly ? ['all'] : ['own', 'all']
  return ['create', 'read', 'update', 'delete'].flatMap((a) =>
    scopes.map((s) => `platform.${kind.plural}/${path}.${a}:${s}`),
  )
}
