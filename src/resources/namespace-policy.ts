import type { NamespaceStanding } from './namespace-store.ts'

/*
 * Who may create in a namespace. A resource's create permission carries the namespace
 * (`platform.functions/<ns>/<name>.create:own|all`): `:all` covers every namespace (admins);
 * `:own` covers namespaces the user owns or was granted, and claims a namespace nobody holds yet.
 * Namespaces themselves: `platform.namespaces/<ns>.create:own` claims one explicitly
 * (POST /api/v1/namespaces); `read|update|delete:all` lets admins see, grant and release any.
 */
export const namespacePermission = (
  namespace: string,
  action: 'create' | 'read' | 'update' | 'delete',
  scope: 'own' | 'all',
): string => `platform.namespaces/${namespace}.${action}:${scope}`

/** Whether a principal holding the resource's create permission (`anyNamespace`: at scope all) may create in this namespace. */
export function mayCreateIn(anyNamespace: boolean, standing: NamespaceStanding): boolean {
  return anyNamespace || !standing.exists || standing.uses
}
