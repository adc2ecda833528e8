import { Type as T, type Static } from '@sinclair/typebox'
import { Nullable, Timestamp, Uuid } from './common.ts'

/* Users, roles and API keys on the management surface. */

/**
 * `auth.changed` (core NATS): AUTH_CACHE keys changed (`u.<user id>`, `k.<key hash>`), from process
 * `o`; `all`: every one (a change made outside the platform). Every process drops its copies
 * (src/auth/principal-cache.ts) and the state entries the named users own (src/states/entry-cache.ts).
 */
export const AuthChange = T.Object(
  { o: T.String(), keys: T.Optional(T.Array(T.String())), all: T.Optional(T.Boolean()) },
  { title: 'AuthChange' },
)

/** `{"<permission>": true}`: what a role or an API key grants. */
export const Grants = T.Record(T.String({ minLength: 1, maxLength: 300 }), T.Boolean(), {
  description: '`{"<permission>": true}`',
})
export const RoleName = T.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9_ -]{0,62}$' })
export const Email = T.String({ format: 'email', maxLength: 320 })

export const User = T.Object(
  {
    id: Uuid,
    email: T.String(),
    is_active: T.Boolean(),
    roles: T.Array(T.String()),
    last_login_at: Nullable(T.String()),
    created_at: T.String(),
  },
  { title: 'User' },
)
export type User = Static<typeof User>
export const Role = T.Object(
  {
    id: Uuid,
    name: T.String(),
    description: T.String(),
    permissions: Grants,
    users: T.Array(Uuid),
    created_at: T.String(),
  },
  { title: 'Role' },
)
export type Role = Static<typeof Role>
export const ApiKey = T.Object(
  {
    id: Uuid,
    name: T.String(),
    key_prefix: T.String(),
    user_id: Uuid,
    permissions: Grants,
    expires_at: Nullable(T.String()),
    last_used_at: Nullable(T.String()),
    created_at: T.String(),
  },
  { title: 'ApiKey' },
)
export type ApiKey = Static<typeof ApiKey>
/** The answer to minting a key: the record plus the key itself, shown this once. */
export const ApiKeyCreated = T.Object({ ...ApiKey.properties, key: T.String() })
export const PermissionInfo = T.Object({ permission: T.String(), description: T.String() }, { title: 'PermissionInfo' })

export const ById = T.Object({ id: Uuid })
export const RoleByName = T.Object({ name: RoleName })
export const RoleUserParams = T.Object({ name: RoleName, id: Uuid })
export const Paging = T.Object({
  limit: T.Optional(T.Integer({ minimum: 1, maximum: 1000, default: 100 })),
  offset: T.Optional(T.Integer({ minimum: 0, default: 0 })),
})

export const UserCreateBody = T.Object(
  { email: Email, is_active: T.Optional(T.Boolean()), roles: T.Optional(T.Array(RoleName)) },
  { additionalProperties: false },
)
export const UserUpdateBody = T.Object(
  { email: T.Optional(Email), is_active: T.Optional(T.Boolean()), roles: T.Optional(T.Array(RoleName)) },
  { additionalProperties: false },
)
export const RoleCreateBody = T.Object(
  { name: RoleName, description: T.Optional(T.String({ maxLength: 1000 })), permissions: T.Optional(Grants) },
  { additionalProperties: false },
)
export const RoleUpdateBody = T.Object(
  { description: T.Optional(T.String({ maxLength: 1000 })), permissions: T.Optional(Grants) },
  { additionalProperties: false },
)
export const ApiKeyCreateBody = T.Object(
  {
    name: T.String({ minLength: 1, maxLength: 200 }),
    permissions: Grants,
    expires_at: T.Optional(Nullable(Timestamp)),
  },
  { additionalProperties: false },
)
