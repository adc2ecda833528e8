import { bind, type BoundRoute } from '../api/bind.ts'
import { can, type Principal } from '../auth/principal.ts'
import { permissionSet } from '../feature/permissions.ts'
import { conflict, forbidden, notFound } from '../kernel/errors.ts'
import { sql, type Db } from '../platform/db.ts'
import { namespacePermission } from '../resources/namespace-policy.ts'
import { NAMESPACE_ROUTES as R } from './routes.ts'
import {
  acceptMembership,
  addMember,
  claimNamespace,
  deleteNamespace,
  getNamespace,
  listNamespaces,
  removeMember,
  type NamespaceRecord,
} from '../resources/namespace-store.ts'

/** The permissions this module checks, for the reference (its feature contributes the list). */
export const declaredNamespacePermissions = permissionSet()

/*
 * `/api/v1/namespaces`: the namespaces a user owns or was granted, claiming one, and granting it.
 * A namespace the caller neither uses nor administers answers 404 (no existence leak), except a
 * claim of a held one (409: the name is taken, which the caller needs to know to pick another).
 */
declaredNamespacePermissions.add(
  namespacePermission('{namespace}', 'create', 'own'),
  'claim a namespace nobody holds with POST /api/v1/namespaces (creating a resource in a free namespace claims it too)',
)
declaredNamespacePermissions.add(
  namespacePermission('{namespace}', 'read', 'all'),
  'list and read every namespace (admin)',
)
declaredNamespacePermissions.add(
  namespacePermission('{namespace}', 'update', 'all'),
  'grant and revoke members of every namespace (admin)',
)
declaredNamespacePermissions.add(
  namespacePermission('{namespace}', 'delete', 'all'),
  'release any empty namespace (admin)',
)

/** Claiming and granting need no permission beyond ownership: closed to user code (src/auth/execution-scope.ts). */
const noExecutionToken = (p: Principal) => {
  if (p.executionId !== undefined) throw forbidden('not available to an execution token', 'auth.execution_token')
}

export function namespaceHandlers(db: Db): BoundRoute[] {
  const missing = (name: string) => notFound(`namespace ${name} not found`, 'namespace.not_found')

  /** The namespace, if the caller may see it (owner, member or admin); 404 otherwise. */
  async function visible(p: Principal, name: string): Promise<NamespaceRecord> {
    const ns = await getNamespace(db, name)
    if (ns === null) throw missing(name)
    if (
      ns.owner_id === p.userId ||
      ns.members.some((m) => m.user_id === p.userId) ||
      can(p, namespacePermission(name, 'read', 'all'))
    )
      return ns
    throw missing(name)
  }
  /** Owner or admin may change membership and release; a member sees the namespace but may not. */
  async function manageable(p: Principal, name: string, action: 'update' | 'delete'): Promise<NamespaceRecord> {
    const ns = await visible(p, name)
    if (ns.owner_id === p.userId || can(p, namespacePermission(name, action, 'all'))) return ns
    throw forbidden(`only the owner of ${name} or an admin may do this`, 'namespace.not_owner')
  }

  return [
    bind(R.list, async ({ principal: p, query }) => {
      const all = can(p, namespacePermission('*', 'read', 'all'))
      return {
        body: await listNamespaces(db, all ? null : p.userId, { limit: query.limit ?? 100, offset: query.offset ?? 0 }),
      }
    }),

    bind(R.create, async ({ principal: p, body: { name } }) => {
      noExecutionToken(p)
      if (!can(p, namespacePermission(name, 'create', 'own')))
        throw forbidden(`requires ${namespacePermission(name, 'create', 'own')}`)
      if (!(await claimNamespace(db, name, p.userId)))
        throw conflict(`namespace ${name} is held by someone else`, 'namespace.exists')
      return { status: 201, body: await getNamespace(db, name) }
    }),

    bind(R.get, async ({ principal: p, params }) => ({ body: await visible(p, params.name) })),

    bind(R.delete, async ({ principal: p, params: { name } }) => {
      noExecutionToken(p)
      await manageable(p, name, 'delete')
      if (!(await deleteNamespace(db, name)))
        throw conflict(`namespace ${name} still holds resources`, 'namespace.not_empty')
      return { status: 204 }
    }),

    bind(R.addMember, async ({ principal: p, params: { name, user_id: userId } }) => {
      noExecutionToken(p)
      const ns = await visible(p, name)
      // A member accepting their own grant (an admin granting to themselves goes through addMember).
      if (userId === p.userId && ns.owner_id !== p.userId && ns.members.some((m) => m.user_id === p.userId)) {
        await acceptMembership(db, name, userId)
        return { body: await getNamespace(db, name) }
      }
      await manageable(p, name, 'update')
      const exists = await db.oneFirst(sql.unsafe`select exists (select 1 from users where id = ${userId}::uuid)`)
      if (exists !== true) throw notFound('user not found', 'user.not_found')
      await addMember(db, name, userId, p.userId)
      return { body: await getNamespace(db, name) }
    }),

    bind(R.removeMember, async ({ principal: p, params: { name, user_id: userId } }) => {
      noExecutionToken(p)
      const ns = await visible(p, name)
      // a member may leave; taking a grant from someone else is for the owner or an admin
      if (!(userId === p.userId && ns.members.some((m) => m.user_id === p.userId))) await manageable(p, name, 'update')
      if (!(await removeMember(db, name, userId)))
        throw notFound(`user ${userId} is not a member of ${name}`, 'namespace.not_member')
      return { body: await getNamespace(db, name) }
    }),
  ]
}
