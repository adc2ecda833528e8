import { kindPermissions } from '../resources/permissions.ts'
import type { AnyKind } from '../resources/kind.ts'

/*
 * Every permission the platform checks, for `GET /api/v1/roles/permissions/reference`. Resource
 * kinds contribute theirs from the kind description; every other module registers the strings it
 * checks next to where it checks them (`registerPermission(...)` at module load), so the reference
 * cannot drift from the code.
 */
const registered = new Map<string, string>()

export function registerPermission(permission: string, description: string): string {
  registered.set(permission, description)
  return permission
}

export interface PermissionInfo {
  permission: string
  description: string
}

export function permissionReference(kinds: readonly AnyKind[]): PermissionInfo[] {
  const out = new Map<string, string>()
  for (const kind of kinds)
    for (const p of kindPermissions(kind))
      out.set(
        p,
        `${kind.title}: ${p.split('.').at(-1)?.replace(':', ' (')})${kind.adminOnly ? ', admin-only kind' : ''}`,
      )
  for (const [p, d] of registered) out.set(p, d)
  return [...out]
    .map(([permission, description]) => ({ permission, description }))
    .sort((a, b) => a.permission.localeCompare(b.permission))
}
