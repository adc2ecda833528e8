import { Type as T } from '@sinclair/typebox'
import { Nullable, Timestamp, Uuid } from '../../schemas/common.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'

/* Management routes for users, roles and API keys (WIRE.md "Auth", "API keys", "Permissions"). */
const Grants = T.Record(T.String({ minLength: 1, maxLength: 300 }), T.Boolean(), { description: '`{"<permission>": true}`' })
const RoleName = T.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9_ -]{0,62}$' })
const User = T.Object({ id: Uuid, email: T.String(), is_active: T.Boolean(), roles: T.Array(T.String()), last_login_at: Nullable(T.String()), created_at: T.String() }, { title: 'User' })
const Role = T.Object({ id: Uuid, name: T.String(), description: T.String(), permissions: Grants, users: T.Array(Uuid), created_at: T.String() }, { title: 'Role' })
const ApiKey = T.Object({ id: Uuid, name: T.String(), key_prefix: T.String(), user_id: Uuid, permissions: Grants, expires_at: Nullable(T.String()), last_used_at: Nullable(T.String()), created_at: T.String() }, { title: 'ApiKey' })
const Email = T.String({ format: 'email', maxLength: 320 })
const ById = T.Object({ id: Uuid })
const ByName = T.Object({ name: RoleName })
const Paging = T.Object({ limit: T.Optional(T.Integer({ minimum: 1, maximum: 1000, default: 100 })), offset: T.Optional(T.Integer({ minimum: 0, default: 0 })) })

const m = { surface: 'management' as const, auth: true as const, target: 'rpc' as const }
const u = { ...m, tags: ['Users'] }
const r = { ...m, tags: ['Roles'] }
const k = { ...m, tags: ['API keys'] }

export const ACCESS_ROUTES = {
  usersList: defineRoute({ ...u, id: 'users.list', method: 'GET', path: '/api/v1/users', summary: 'Users (admin: all; others: only themselves)', query: Paging, response: T.Array(User) }),
  usersGet: defineRoute({ ...u, id: 'users.get', method: 'GET', path: '/api/v1/users/{id}', summary: 'One user', params: ById, response: User, errors: [404] }),
  usersCreate: defineRoute({
    ...u, id: 'users.create', method: 'POST', path: '/api/v1/users', summary: 'Create a user (admin)', status: 201, response: User, errors: [403, 409, 422],
    body: T.Object({ email: Email, is_active: T.Optional(T.Boolean()), roles: T.Optional(T.Array(RoleName)) }, { additionalProperties: false }),
  }),
  usersUpdate: defineRoute({
    ...u, id: 'users.update', method: 'PATCH', path: '/api/v1/users/{id}', summary: 'Change a user (admin); `roles` replaces its role list', params: ById, response: User, errors: [403, 404, 409, 422],
    body: T.Object({ email: T.Optional(Email), is_active: T.Optional(T.Boolean()), roles: T.Optional(T.Array(RoleName)) }, { additionalProperties: false }),
  }),
  usersDelete: defineRoute({ ...u, id: 'users.delete', method: 'DELETE', path: '/api/v1/users/{id}', summary: 'Delete a user (admin)', params: ById, status: 204, errors: [403, 404] }),
  rolesPermissionsReference: defineRoute({
    ...r, id: 'roles.permissions.reference', method: 'GET', path: '/api/v1/roles/permissions/reference', summary: 'Every permission the platform checks (any authenticated user)',
    response: T.Array(T.Object({ permission: T.String(), description: T.String() }, { title: 'PermissionInfo' })),
  }),
  rolesList: defineRoute({ ...r, id: 'roles.list', method: 'GET', path: '/api/v1/roles', summary: 'Roles (admin)', response: T.Array(Role) }),
  rolesGet: defineRoute({ ...r, id: 'roles.get', method: 'GET', path: '/api/v1/roles/{name}', summary: 'One role (admin)', params: ByName, response: Role, errors: [403, 404] }),
  rolesCreate: defineRoute({
    ...r, id: 'roles.create', method: 'POST', path: '/api/v1/roles', summary: 'Create a role (admin); invalid permission strings answer 422', status: 201, response: Role, errors: [403, 409, 422],
    body: T.Object({ name: RoleName, description: T.Optional(T.String({ maxLength: 1000 })), permissions: T.Optional(Grants) }, { additionalProperties: false }),
  }),
  rolesUpdate: defineRoute({
    ...r, id: 'roles.update', method: 'PATCH', path: '/api/v1/roles/{name}', summary: 'Change a role (admin); `permissions` replaces its grants', params: ByName, response: Role, errors: [403, 404, 422],
    body: T.Object({ description: T.Optional(T.String({ maxLength: 1000 })), permissions: T.Optional(Grants) }, { additionalProperties: false }),
  }),
  rolesDelete: defineRoute({ ...r, id: 'roles.delete', method: 'DELETE', path: '/api/v1/roles/{name}', summary: 'Delete a role (admin)', params: ByName, status: 204, errors: [403, 404] }),
  rolesUsersAdd: defineRoute({ ...r, id: 'roles.users.add', method: 'POST', path: '/api/v1/roles/{name}/users/{id}', summary: 'Give a user this role (admin)', params: T.Object({ name: RoleName, id: Uuid }), response: Role, errors: [403, 404] }),
  rolesUsersRemove: defineRoute({ ...r, id: 'roles.users.remove', method: 'DELETE', path: '/api/v1/roles/{name}/users/{id}', summary: 'Take this role from a user (admin)', params: T.Object({ name: RoleName, id: Uuid }), response: Role, errors: [403, 404] }),
  apiKeysList: defineRoute({ ...k, id: 'api-keys.list', method: 'GET', path: '/api/v1/api-keys', summary: 'API keys (own; admin: all)', query: Paging, response: T.Array(ApiKey) }),
  apiKeysGet: defineRoute({ ...k, id: 'api-keys.get', method: 'GET', path: '/api/v1/api-keys/{id}', summary: 'One API key (without the key)', params: ById, response: ApiKey, errors: [404] }),
  apiKeysCreate: defineRoute({
    ...k, id: 'api-keys.create', method: 'POST', path: '/api/v1/api-keys', summary: 'Mint an API key; the key is shown once. Grants wider than the owner holds answer 403', status: 201,
    response: T.Object({ ...ApiKey.properties, key: T.String() }), errors: [403, 422],
    body: T.Object({ name: T.String({ minLength: 1, maxLength: 200 }), permissions: Grants, expires_at: T.Optional(Nullable(Timestamp)) }, { additionalProperties: false }),
  }),
  apiKeysDelete: defineRoute({ ...k, id: 'api-keys.delete', method: 'DELETE', path: '/api/v1/api-keys/{id}', summary: 'Revoke an API key (stops working at once, everywhere)', params: ById, status: 204, errors: [404] }),
}

export function accessRoutes(): RouteDef[] {
  return Object.values(ACCESS_ROUTES)
}
