import { Type as T } from '@sinclair/typebox'
import { RoleCreateBody, UserCreateBody } from '../../schemas/access.ts'
import { principalCacheOf } from '../auth/principal.ts'
import type { AfterCommit, ConfigCurrent, ConfigKind, ConfigTx } from '../feature/config-kinds.ts'
import { bodyChecksum, bodyIssues, issuesOf } from '../feature/config-kind-support.ts'
import type { ServiceContext } from '../feature/define.ts'
import { invalid } from '../kernel/errors.ts'
import { sql, type Db } from '../platform/db.ts'
import { anyRows, oneRow, rowType } from '../platform/typed-rows.ts'
import { checkGrants } from './handlers.ts'

/*
 * Roles and users as config kinds (sections `roles`, `users`; an administrator's config only,
 * never a package). A role's key is its name, its body `{name, description, permissions}`; a
 * user's key is its email (lower case, as stored), its body `{email, is_active, roles}` — the
 * create endpoints' fields. A user's password is never part of config: a user config creates logs
 * in as any user made through the API does, by the configured AUTH_MODE (an emailed code, or a
 * token exchange; in `password` mode only a user with a password can, which config never sets).
 * Every write that changes who may do what ends, after the commit, by deleting the affected users'
 * AUTH_CACHE entries, as the API's writes do.
 */
const Grants = T.Record(T.String(), T.Boolean())
const RoleRow = rowType(
  T.Object(
    {
      name: T.String(),
      description: T.String(),
      permissions: Grants,
      managed_by: T.Union([T.String(), T.Null()]),
      checksum: T.Union([T.String(), T.Null()]),
    },
    { title: 'managed role' },
  ),
)
const UserRow = rowType(
  T.Object(
    {
      id: T.String(),
      email: T.String(),
      is_active: T.Boolean(),
      roles: T.Array(T.String()),
      managed_by: T.Union([T.String(), T.Null()]),
      checksum: T.Union([T.String(), T.Null()]),
    },
    { title: 'managed user' },
  ),
)
const IdRow = rowType(T.Object({ id: T.String() }, { title: 'id' }))
const KeyHashRow = rowType(T.Object({ key_hash: T.String() }, { title: 'API key hash' }))

type Q = ConfigTx | Db

const text = (v: unknown, fallback: string): string => (typeof v === 'string' ? v : fallback)

// ---- roles

type RoleBody = { name: string; description: string; permissions: Record<string, boolean> }

function roleBody(body: Readonly<Record<string, unknown>>): RoleBody {
  const grants = body['permissions']
  const permissions: Record<string, boolean> = {}
  if (typeof grants === 'object' && grants !== null && !Array.isArray(grants))
    for (const [k, v] of Object.entries(grants)) permissions[k] = v === true
  return { name: text(body['name'], ''), description: text(body['description'], ''), permissions }
}
const roleChecksum = (body: Readonly<Record<string, unknown>>): string => bodyChecksum(roleBody(body))

const membersOf = async (q: Q, name: string): Promise<string[]> =>
  (
    await anyRows(
      q,
      IdRow,
      sql.unsafe`select ur.user_id as id from user_roles ur join roles r on r.id = ur.role_id where r.name = ${name}`,
    )
  ).map((m) => m.id)

export function roleConfigKind(ctx: Pick<ServiceContext, 'db'>): ConfigKind {
  const invalidate = (ids: string[]): AfterCommit[] =>
    ids.length === 0 ? [] : [async () => principalCacheOf(ctx.db)?.invalidateUsers(ids)]
  return {
    kind: 'role',
    section: 'roles',
    packageable: false,
    secretFields: [],
    keyOf: (body) => text(body['name'], ''),
    refs: () => [],
    checksum: roleChecksum,
    async validate(_p, body) {
      const issues = bodyIssues(RoleCreateBody, body)
      if (issues.length > 0) return issues
      return issuesOf(() => checkGrants(roleBody(body).permissions))
    },
    async list(db) {
      const rows = await anyRows(
        db,
        RoleRow,
        sql.unsafe`select name, description, permissions, managed_by, checksum from roles order by name`,
      )
      return rows.map((r): ConfigCurrent => {
        const body = roleBody(r)
        return { key: r.name, body, managedBy: r.managed_by, checksum: r.checksum ?? roleChecksum(body) }
      })
    },
    async write(tx, _p, body, { managedBy }) {
      const issues = bodyIssues(RoleCreateBody, body)
      if (issues.length > 0) throw invalid(`invalid role ${text(body['name'], '')}`, issues)
      const { name, description, permissions } = roleBody(body)
      checkGrants(permissions)
      await tx.query(sql.unsafe`insert into roles (name, description, permissions, managed_by, checksum)
        values (${name}, ${description}, ${sql.jsonb(permissions)}, ${managedBy}, ${roleChecksum(body)})
        on conflict (name) do update set description = excluded.description, permissions = excluded.permissions,
          managed_by = excluded.managed_by, checksum = excluded.checksum, updated_at = now()`)
      return invalidate(await membersOf(tx, name))
    },
    async remove(tx, _p, key) {
      const members = await membersOf(tx, key)
      await tx.query(sql.unsafe`delete from roles where name = ${key}`)
      return invalidate(members)
    },
  }
}

// ---- users

type UserBody = { email: string; is_active: boolean; roles: string[] }

function userBody(body: Readonly<Record<string, unknown>>): UserBody {
  const roles = body['roles']
  return {
    email: text(body['email'], '').toLowerCase(),
    is_active: typeof body['is_active'] === 'boolean' ? body['is_active'] : true,
    // membership is a set: the order a file lists it in changes nothing
    roles: Array.isArray(roles) ? [...new Set(roles.map(String))].sort() : ['Users'],
  }
}
const userChecksum = (body: Readonly<Record<string, unknown>>): string => bodyChecksum(userBody(body))

export function userConfigKind(ctx: Pick<ServiceContext, 'db'>): ConfigKind {
  const cache = () => principalCacheOf(ctx.db)
  return {
    kind: 'user',
    section: 'users',
    packageable: false,
    secretFields: [],
    keyOf: (body) => text(body['email'], '').toLowerCase(),
    refs: (body) => userBody(body).roles.map((r) => ({ kind: 'role', key: r })),
    checksum: userChecksum,
    validate: async (_p, body) => bodyIssues(UserCreateBody, body),
    async list(db) {
      const rows = await anyRows(
        db,
        UserRow,
        sql.unsafe`select u.id, u.email, u.is_active, u.managed_by, u.checksum,
          coalesce(array_agg(r.name order by r.name) filter (where r.id is not null), '{}') as roles
        from users u left join user_roles ur on ur.user_id = u.id left join roles r on r.id = ur.role_id
        group by u.id order by u.email`,
      )
      return rows.map((r): ConfigCurrent => {
        const body = userBody(r)
        return { key: r.email.toLowerCase(), body, managedBy: r.managed_by, checksum: r.checksum ?? userChecksum(body) }
      })
    },
    async write(tx, _p, body, { managedBy }) {
      const issues = bodyIssues(UserCreateBody, body)
      if (issues.length > 0) throw invalid(`invalid user ${text(body['email'], '')}`, issues)
      const { email, is_active: active, roles } = userBody(body)
      const found = await tx.anyFirst(sql.unsafe`select name from roles where name = any(${sql.array(roles, 'text')})`)
      const missing = roles.filter((r) => !found.includes(r))
      if (missing.length > 0)
        throw invalid(
          'unknown roles',
          missing.map((r) => ({ path: '/roles', message: `no role ${r}` })),
        )
      const sum = userChecksum(body)
      const { id } = await oneRow(
        tx,
        IdRow,
        sql.unsafe`insert into users (email, is_active, managed_by, checksum) values (${email}, ${active}, ${managedBy}, ${sum})
        on conflict (lower(email)) do update set is_active = excluded.is_active, managed_by = excluded.managed_by, checksum = excluded.checksum, updated_at = now()
        returning id`,
      )
      await tx.query(sql.unsafe`delete from user_roles where user_id = ${id}::uuid`)
      await tx.query(
        sql.unsafe`insert into user_roles (user_id, role_id) select ${id}::uuid, id from roles where name = any(${sql.array(roles, 'text')})`,
      )
      return [async () => cache()?.invalidateUsers([id])]
    },
    async remove(tx, _p, key) {
      const ids = (
        await anyRows(tx, IdRow, sql.unsafe`select id from users where lower(email) = ${key.toLowerCase()}`)
      ).map((r) => r.id)
      if (ids.length === 0) return []
      const keys = await anyRows(
        tx,
        KeyHashRow,
        sql.unsafe`select key_hash from api_keys where user_id = any(${sql.array(ids, 'uuid')})`,
      )
      await tx.query(sql.unsafe`delete from users where id = any(${sql.array(ids, 'uuid')})`)
      return [
        async () => {
          await cache()?.invalidateUsers(ids)
          await cache()?.invalidateKeys(keys.map((k) => k.key_hash))
        },
      ]
    },
  }
}
