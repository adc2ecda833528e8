import { kindPermissions } from '../resources/permissions.ts'
import type { AnyKind } from '../resources/kind.ts'

/*
 * Every permission the platform checks, for `GET /api/v1/roles/permissions/reference`. Resource
 * kinds contribute theirs from the kind description; every other module declares the strings it
 * checks next to where it checks them, in a set of its own (`permissionSet()`), and its feature
 * contributes that set's list as `permissions`, so the reference cannot drift from the code. The
 * set is the module's own value: declaring a permission registers nothing anywhere.
 */
export interface PermissionInfo {
  permission: string
  description: string
}

export interface PermissionSet {
  /** Declares a permission this module checks; answers the permission string. */
  add(permission: string, description: string): string
  readonly list: readonly PermissionInfo[]
}

export function permissionSet(): PermissionSet {
  const list: PermissionInfo[] = []
  return {
    add(permission, description) {
      list.push({ permission, description })
      return permission
    },
    list,
  }
}

/** The reference: the kinds' permissions, then the features' declared ones (a declared description wins). */
export function permissionReference(kinds: readonly AnyKind[], declared: readonly PermissionInfo[]): PermissionInfo[] {
  const out = new Map<string, string>()
  for (const kind of kinds)
    for (const p of kindPermissions(kind))
      out.set(
        p,
        `${kind.title}: ${p.split('.').at(-1)?.replace(':', ' (')})${kind.adminOnly ? ', admin-only kind' : ''}`,
      )
  for (const { permission, description } of declared) out.set(permission, description)
  return [...out]
    .map(([permission, description]) => ({ permission, description }))
    .sort((a, b) => a.permission.localeCompare(b.permission))
}
