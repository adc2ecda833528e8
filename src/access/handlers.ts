import { bind, type BoundRoute, type RouteHandler } from '../api/bind.ts'
import type { RouteDef } from '../api/route.ts'
import { can, principalCacheOf, type Principal } from '../auth/principal.ts'
import { grantsOf, hasPermission, isValidPermission } from '../auth/permissions.ts'
import { conflict, forbidden, invalid, notFound } from '../kernel/errors.ts'
import { sql, type Db } from '../platform/db.ts'
import { anyRows, maybeRow, oneRow, rowType } from '../platform/typed-rows.ts'
import { Type as T } from '@sinclair/typebox'
import { ApiKey, Role, User } from '../../schemas/access.ts'
import { newApiKey } from '../auth/api-key-format.ts'
import { ACCESS_ROUTES as R } from './routes.ts'
import { permissionSet, type PermissionInfo } from '../feature/permissions.ts'

/** The permissions this module checks, for the reference (its feature contributes the list). */
export const accessPermissions = permissionSet()

/*
 * Users, roles and API keys. Every write that changes who may do what ends by deleting the
 * affected AUTH_CACHE entries (src/auth/principal-cache.ts), after the database commit.
 * Users and keys the caller may not see answer 404, admin-only areas 403.
 */
const P = {
  usersRead: accessPermissions.add('platform.users.read:all', 'list and read every user (without it: only yourself)'),
  usersCreate: accessPermissions.add('platform.users.create:all', 'create users'),
  usersUpdate: accessPermissions.add('platform.users.update:all', 'change users: email, active flag, roles'),
  usersDelete: accessPermissions.add('platform.users.delete:all', 'delete users'),
  rolesRead: accessPermissions.add('platform.roles.read:all', 'list and read roles'),
  rolesCreate: accessPermissions.add('platform.roles.create:all', 'create roles'),
  rolesUpdate: accessPermissions.add('platform.roles.update:all', 'change role grants and membership'),
  rolesDelete: accessPermissions.add('platform.roles.delete:all', 'delete roles'),
  keysRead: accessPermissions.add(
    'platform.api_keys.read:all',
    'list and read every API key (own keys need no permission)',
  ),
  keysDelete: accessPermissions.add('platform.api_keys.delete:all', 'revoke any API key'),
}

/* Rows as they come back (timestamps as ISO strings, jsonb parsed: src/platform/db.ts); users, roles and keys read straight into their API shapes. */
const UserRow = rowType(User)
const RoleRow = rowType(Role)
const ApiKeyRow = rowType(ApiKey)
const StoredKeyRow = rowType(T.Object({ ...ApiKey.properties, key_hash: T.String() }, { title: 'stored API key' }))
const IdRow = rowType(T.Object({ id: T.String() }, { title: 'id' }))
const NameRow = rowType(T.Object({ name: T.String() }, { title: 'role name' }))
const KeyHashRow = rowType(T.Object({ key_hash: T.String() }, { title: 'API key hash' }))
const UserIdRow = rowType(T.Object({ user_id: T.String() }, { title: 'role member' }))
const KEY_COLUMNS = sql.unsafe`id, name, key_prefix, user_id, permissions, expires_at, last_used_at, created_at`

export function checkGrants(grants: Record<string, boolean>): void {
  const bad = Object.keys(grants).filter((p) => !isValidPermission(p))
  if (bad.length > 0)
    throw invalid(
      'invalid permission strings',
      bad.map((p) => ({ path: `/permissions/${p}`, message: 'expected <service>.<resource>.<action>:own|all' })),
    )
}

/**
 * Binds an access route. Users, roles and API keys are out of an execution token's reach, even the
 * routes that need no permission (minting an own API key would outlive the execution).
 */
const on = <T extends RouteDef & { auth: true }>(route: T, handler: RouteHandler<T>): BoundRoute =>
  bind(route, async (input) => {
    const p: Principal | null = input.principal
    if (p?.executionId !== undefined)
      throw forbidden('an execution token cannot manage users, roles or API keys', 'auth.execution_token')
    return handler(input)
  })

/** `reference`: every permission of the platform (the kinds' and the features' declared ones), built by the module. */
export function accessHandlers(db: Db, reference: () => PermissionInfo[]): BoundRoute[] {
  const cache = () => principalCacheOf(db)
  const invalidateUsers = async (ids: string[]) => cache()?.invalidateUsers(ids)
  const admin = (p: Principal, perm: string) => {
    if (!can(p, perm)) throw forbidden(`requires ${perm}`)
  }
  const paging = (q: { limit?: number; offset?: number }) => ({ limit: q.limit ?? 100, offset: q.offset ?? 0 })

  // ---- users
  const userSelect = sql.unsafe`select u.id, u.email, u.is_active,
      coalesce(array_agg(r.name order by r.name) filter (where r.id is not null), '{}') as roles, u.last_login_at, u.created_at
    from users u left join user_roles ur on ur.user_id = u.id left join roles r on r.id = ur.role_id`
  const userById = async (id: string) => {
    const row = await maybeRow(db, UserRow, sql.unsafe`${userSelect} where u.id = ${id}::uuid group by u.id`)
    if (row === null) throw notFound('user not found', 'user.not_found')
    return row
  }
  const visibleUser = (p: Principal, id: string) => {
    if (id !== p.userId && !can(p, P.usersRead)) throw notFound('user not found', 'user.not_found')
  }
  /** Users edited by hand (their email, activity or roles) are no longer config's (an uninstall or a prune leaves them). */
  const detachUsers = async (ids: string[]) =>
    db.query(
      sql.unsafe`update users set managed_by = null, checksum = null where id = any(${sql.array(ids, 'uuid')}) and managed_by is not null`,
    )
  const setRoles = async (userId: string, roles: string[]) => {
    const found = await db.anyFirst(sql.unsafe`select name from roles where name = any(${sql.array(roles, 'text')})`)
    const missing = roles.filter((r) => !found.includes(r))
    if (missing.length > 0)
      throw invalid(
        'unknown roles',
        missing.map((r) => ({ path: '/roles', message: `no role ${r}` })),
      )
    await db.query(sql.unsafe`delete from user_roles where user_id = ${userId}::uuid`)
    await db.query(
      sql.unsafe`insert into user_roles (user_id, role_id) select ${userId}::uuid, id from roles where name = any(${sql.array(roles, 'text')})`,
    )
  }
  const usersList = on(R.usersList, async ({ principal: p, query }) => {
    const { limit, offset } = paging(query)
    const all = can(p, P.usersRead)
    const where = all ? sql.unsafe`` : sql.unsafe`where u.id = ${p.userId}::uuid`
    const rows = await anyRows(
      db,
      UserRow,
      sql.unsafe`${userSelect} ${where} group by u.id order by u.created_at, u.id limit ${limit} offset ${offset}`,
    )
    const total = all ? await db.oneFirst(sql.unsafe`select count(*) from users`) : 1
    return { body: rows, headers: { 'x-total-count': String(total) } }
  })
  const usersGet = on(R.usersGet, async ({ principal: p, params: { id } }) => {
    visibleUser(p, id)
    return { body: await userById(id) }
  })
  const usersCreate = on(R.usersCreate, async ({ principal: p, body: b }) => {
    admin(p, P.usersCreate)
    const created = await maybeRow(
      db,
      IdRow,
      sql.unsafe`insert into users (email, is_active) values (${b.email.toLowerCase()}, ${b.is_active ?? true}) on conflict do nothing returning id`,
    )
    if (created === null) throw conflict('a user with this email exists', 'user.exists')
    await setRoles(created.id, b.roles ?? ['Users'])
    return { status: 201, body: await userById(created.id) }
  })
  const usersUpdate = on(R.usersUpdate, async ({ principal: p, params: { id }, body: b }) => {
    visibleUser(p, id)
    admin(p, P.usersUpdate)
    await userById(id)
    if (b.email !== undefined) {
      const taken = await db.maybeOneFirst(
        sql.unsafe`select id from users where lower(email) = ${b.email.toLowerCase()} and id <> ${id}::uuid`,
      )
      if (taken !== null) throw conflict('a user with this email exists', 'user.exists')
      await db.query(
        sql.unsafe`update users set email = ${b.email.toLowerCase()}, updated_at = now() where id = ${id}::uuid`,
      )
    }
    if (b.is_active !== undefined)
      await db.query(sql.unsafe`update users set is_active = ${b.is_active}, updated_at = now() where id = ${id}::uuid`)
    if (b.roles !== undefined) await setRoles(id, b.roles)
    await detachUsers([id])
    await invalidateUsers([id])
    return { body: await userById(id) }
  })
  const usersDelete = on(R.usersDelete, async ({ principal: p, params: { id } }) => {
    visibleUser(p, id)
    admin(p, P.usersDelete)
    const keys = await anyRows(db, KeyHashRow, sql.unsafe`select key_hash from api_keys where user_id = ${id}::uuid`)
    const gone = await db.maybeOneFirst(sql.unsafe`delete from users where id = ${id}::uuid returning id`)
    if (gone === null) throw notFound('user not found', 'user.not_found')
    await invalidateUsers([id])
    await cache()?.invalidateKeys(keys.map((k) => k.key_hash))
    return { status: 204 }
  })

  // ---- roles
  const rolesReference = on(R.rolesPermissionsReference, async () => ({ body: reference() }))
  const roleOut = async (name: string) => {
    const row = await maybeRow(
      db,
      RoleRow,
      sql.unsafe`select r.id, r.name, r.description, r.permissions, r.created_at,
        coalesce(array_agg(ur.user_id::text) filter (where ur.user_id is not null), '{}') as users
      from roles r left join user_roles ur on ur.role_id = r.id where r.name = ${name} group by r.id`,
    )
    if (row === null) throw notFound('role not found', 'role.not_found')
    return row
  }
  const membersOf = async (name: string) =>
    (
      await anyRows(
        db,
        UserIdRow,
        sql.unsafe`select ur.user_id from user_roles ur join roles r on r.id = ur.role_id where r.name = ${name}`,
      )
    ).map((m) => m.user_id)
  const rolesList = on(R.rolesList, async ({ principal: p }) => {
    admin(p, P.rolesRead)
    const roles = await anyRows(db, NameRow, sql.unsafe`select name from roles order by name`)
    return { body: await Promise.all(roles.map((r) => roleOut(r.name))) }
  })
  const rolesGet = on(R.rolesGet, async ({ principal: p, params }) => {
    admin(p, P.rolesRead)
    return { body: await roleOut(params.name) }
  })
  const rolesCreate = on(R.rolesCreate, async ({ principal: p, body: b }) => {
    admin(p, P.rolesCreate)
    checkGrants(b.permissions ?? {})
    const id = await db.maybeOneFirst(
      sql.unsafe`insert into roles (name, description, permissions) values (${b.name}, ${b.description ?? ''}, ${sql.jsonb(b.permissions ?? {})}) on conflict do nothing returning id`,
    )
    if (id === null) throw conflict('a role with this name exists', 'role.exists')
    return { status: 201, body: await roleOut(b.name) }
  })
  const rolesUpdate = on(R.rolesUpdate, async ({ principal: p, params: { name }, body: b }) => {
    admin(p, P.rolesUpdate)
    await roleOut(name)
    if (b.permissions !== undefined) {
      checkGrants(b.permissions)
      await db.query(
        sql.unsafe`update roles set permissions = ${sql.jsonb(b.permissions)}, updated_at = now() where name = ${name}`,
      )
    }
    if (b.description !== undefined)
      await db.query(
        sql.unsafe`update roles set description = ${b.description}, updated_at = now() where name = ${name}`,
      )
    // edited by hand: no longer config's or a package's (an uninstall leaves it)
    await db.query(sql.unsafe`update roles set managed_by = null, checksum = null where name = ${name}`)
    await invalidateUsers(await membersOf(name))
    return { body: await roleOut(name) }
  })
  const rolesDelete = on(R.rolesDelete, async ({ principal: p, params: { name } }) => {
    admin(p, P.rolesDelete)
    const members = await membersOf(name)
    const gone = await db.maybeOneFirst(sql.unsafe`delete from roles where name = ${name} returning id`)
    if (gone === null) throw notFound('role not found', 'role.not_found')
    await invalidateUsers(members)
    return { status: 204 }
  })
  const membership =
    (add: boolean) =>
    async ({
      principal: p,
      params: { name, id: userId },
    }: {
      principal: Principal
      params: { name: string; id: string }
    }) => {
      admin(p, P.rolesUpdate)
      await roleOut(name)
      await userById(userId)
      if (add)
        await db.query(
          sql.unsafe`insert into user_roles (user_id, role_id) select ${userId}::uuid, id from roles where name = ${name} on conflict do nothing`,
        )
      else
        await db.query(
          sql.unsafe`delete from user_roles where user_id = ${userId}::uuid and role_id = (select id from roles where name = ${name})`,
        )
      await detachUsers([userId])
      await invalidateUsers([userId])
      return { body: await roleOut(name) }
    }
  const rolesUsersAdd = on(R.rolesUsersAdd, membership(true))
  const rolesUsersRemove = on(R.rolesUsersRemove, membership(false))

  // ---- API keys
  const visibleKey = async (p: Principal, id: string, action: 'read' | 'delete') => {
    const row = await maybeRow(
      db,
      StoredKeyRow,
      sql.unsafe`select ${KEY_COLUMNS}, key_hash from api_keys where id = ${id}::uuid`,
    )
    if (row === null || (row.user_id !== p.userId && !can(p, action === 'read' ? P.keysRead : P.keysDelete)))
      throw notFound('API key not found', 'api_key.not_found')
    return row
  }
  const apiKeysList = on(R.apiKeysList, async ({ principal: p, query }) => {
    const { limit, offset } = paging(query)
    const where = can(p, P.keysRead) ? sql.unsafe`` : sql.unsafe`where user_id = ${p.userId}::uuid`
    const rows = await anyRows(
      db,
      ApiKeyRow,
      sql.unsafe`select ${KEY_COLUMNS} from api_keys ${where} order by created_at, id limit ${limit} offset ${offset}`,
    )
    const total = await db.oneFirst(sql.unsafe`select count(*) from api_keys ${where}`)
    return { body: rows, headers: { 'x-total-count': String(total) } }
  })
  const apiKeysGet = on(R.apiKeysGet, async ({ principal: p, params }) => {
    const { key_hash: _hash, ...key } = await visibleKey(p, params.id, 'read')
    return { body: key }
  })
  const apiKeysCreate = on(R.apiKeysCreate, async ({ principal: p, body: b }) => {
    checkGrants(b.permissions)
    // A key never carries more than its minter holds now (a key minting a key is bounded by itself).
    const wider = grantsOf(b.permissions).filter((g) => !hasPermission(p.permissions, g))
    if (wider.length > 0)
      throw forbidden(`the key would grant what you do not hold: ${wider.join(', ')}`, 'api_key.wider_than_owner')
    if (b.expires_at != null && Date.parse(b.expires_at) <= Date.now())
      throw invalid('expires_at is in the past', [{ path: '/expires_at', message: 'must be in the future' }])
    const k = newApiKey()
    const row = await oneRow(
      db,
      ApiKeyRow,
      sql.unsafe`insert into api_keys (user_id, name, key_hash, key_prefix, permissions, expires_at)
      values (${p.userId}::uuid, ${b.name}, ${k.hash}, ${k.prefix}, ${sql.jsonb(b.permissions)}, ${b.expires_at ?? null}) returning ${KEY_COLUMNS}`,
    )
    return { status: 201, body: { ...row, key: k.key } }
  })
  const apiKeysDelete = on(R.apiKeysDelete, async ({ principal: p, params }) => {
    const row = await visibleKey(p, params.id, 'delete')
    await db.query(sql.unsafe`delete from api_keys where id = ${row.id}::uuid`)
    await cache()?.invalidateKeys([row.key_hash])
    return { status: 204 }
  })
  return [
    usersList,
    usersGet,
    usersCreate,
    usersUpdate,
    usersDelete,
    rolesReference,
    rolesList,
    rolesGet,
    rolesCreate,
    rolesUpdate,
    rolesDelete,
    rolesUsersAdd,
    rolesUsersRemove,
    apiKeysList,
    apiKeysGet,
    apiKeysCreate,
    apiKeysDelete,
  ]
}
