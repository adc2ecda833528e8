import { can, type Principal } from '../auth/principal.ts'

/*
 * Who may create in a namespace, as permission strings:
 * `platform.namespaces/<ns>.create:own` covers namespaces the user owns or was granted (and lets
 * the user claim a namespace nobody holds yet); `:all` covers every namespace (administrators).
 * `platform.namespaces/<ns>.update:own|all` is granting and revoking members (owner or admin).
 */
export const namespacePermission = (namespace: string, action: 'create' | 'read' | 'update' | 'delete', scope: 'own' | 'all'): string =>
  `platform.namespaces/${namespace}.${action}:${scope}`

/** How the principal stands in one namespace: what the store knows about it. */
export interface NamespaceStanding {
  exists: boolean
  /** The principal owns the namespace or is one of its members. */
  uses: boolean
  owns: boolean
}

/** Whether the principal may create resources in the namespace (claiming it when nobody holds it). */
export function mayCreateIn(p: Principal, namespace: string, standing: NamespaceStanding): boolean {
  if (can(p, namespacePermission(namespace, 'create', 'all'))) return true
  if (!can(p, namespacePermission(namespace, 'create', 'own'))) return false
  return !standing.exists || standing.uses
}
