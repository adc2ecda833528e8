import { sql, type Db } from '../platform/db.ts'
import { unauthorized } from '../kernel/errors.ts'
import { grantsOf, hasPermission } from './permissions.ts'
import type { Caller } from '../api/route.ts'

/** Who is acting, with their live permissions: what every check at execution time looks at. */
export interface Principal {
  userId: string
  email: string
  permissions: readonly string[]
}

export const can = (p: Principal, permission: string): boolean => hasPermission(p.permissions, permission)

/**
 * Resolves a verified caller to a principal: the user must still exist and be active, and the
 * permissions are those of its roles now, not when the token was issued.
 */
export async function loadPrincipal(db: Db, caller: Caller): Promise<Principal> {
  const row = await db.maybeOne(sql.unsafe`
    select u.id, u.email, u.is_active,
           coalesce(jsonb_agg(r.permissions) filter (where r.id is not null), '[]'::jsonb) as grants
    from users u
    left join user_roles ur on ur.user_id = u.id
    left join roles r on r.id = ur.role_id
    where u.id = ${caller.sub}::uuid
    group by u.id`)
  if (row === null || row['is_active'] !== true) throw unauthorized('user not found or inactive', 'auth.user_inactive')
  const grants = (row['grants'] as Record<string, unknown>[]).flatMap(grantsOf)
  return { userId: String(row['id']), email: String(row['email']), permissions: [...new Set(grants)] }
}
