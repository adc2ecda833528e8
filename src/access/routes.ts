import { Type as T } from '@sinclair/typebox'
import { ApiKey, ApiKeyCreateBody, ApiKeyCreated, ById, Paging, PermissionInfo, Role, RoleByName, RoleCreateBody, RoleUpdateBody, RoleUserParams, User, UserCreateBody, UserUpdateBody } from '../../schemas/access.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'

/* Management routes for users, roles and API keys (WIRE.md "Auth", "API keys", "Permissions"). The shapes live in schemas/access.ts. */
const m = { surface: 'management' as const, auth: true as const, target: 'rpc' as const }
const u = { ...m, tags: ['Users'] }
const r = { ...m, tags: ['Roles'] }
const k = { ...m, tags: ['API keys'] }

export const ACCESS_ROUTES = {
  usersList: defineRoute({ ...u, id: 'users.list', method: 'GET', path: '/api/v1/users', summary: 'Users (admin: all; others: only themselves)', query: Paging, response: T.Array(User) }),
  usersGet: defineRoute({ ...u, id: 'users.get', method: 'GET', path: '/api/v1/users/{id}', summary: 'One user', params: ById, response: User, errors: [404] }),
  usersCreate: defineRoute({
    ...u, id: 'users.create', method: 'POST', path: '/api/v1/users', summary: 'Create a user (admin)', status: 201, response: User, errors: [403, 409, 422],
    body: UserCreateBody,
  }),
  usersUpdate: defineRoute({
    ...u, id: 'users.update', method: 'PATCH', path: '/api/v1/users/{id}', summary: 'Change a user (admin); `roles` replaces its role list', params: ById, response: User, errors: [403, 404, 409, 422],
    body: UserUpdateBody,
  }),
  usersDelete: defineRoute({ ...u, id: 'users.delete', method: 'DELETE', path: '/api/v1/users/{id}', summary: 'Delete a user (admin)', params: ById, status: 204, errors: [403, 404] }),
  rolesPermissionsReference: defineRoute({
    ...r, id: 'roles.permissions.reference', method: 'GET', path: '/api/v1/roles/permissions/reference', summary: 'Every permission the platform checks (any authenticated user)',
    response: T.Array(PermissionInfo),
  }),
  rolesList: defineRoute({ ...r, id: 'roles.list', method: 'GET', path: '/api/v1/roles', summary: 'Roles (admin)', response: T.Array(Role) }),
  rolesGet: defineRoute({ ...r, id: 'roles.get', method: 'GET', path: '/api/v1/roles/{name}', summary: 'One role (admin)', params: RoleByName, response: Role, errors: [403, 404] }),
  rolesCreate: defineRoute({
    ...r, id: 'roles.create', method: 'POST', path: '/api/v1/roles', summary: 'Create a role (admin); invalid permission strings answer 422', status: 201, response: Role, errors: [403, 409, 422],
    body: RoleCreateBody,
  }),
  rolesUpdate: defineRoute({
    ...r, id: 'roles.update', method: 'PATCH', path: '/api/v1/roles/{name}', summary: 'Change a role (admin); `permissions` replaces its grants', params: RoleByName, response: Role, errors: [403, 404, 422],
    body: RoleUpdateBody,
  }),
  rolesDelete: defineRoute({ ...r, id: 'roles.delete', method: 'DELETE', path: '/api/v1/roles/{name}', summary: 'Delete a role (admin)', params: RoleByName, status: 204, errors: [403, 404] }),
  rolesUsersAdd: defineRoute({ ...r, id: 'roles.users.add', method: 'POST', path: '/api/v1/roles/{name}/users/{id}', summary: 'Give a user this role (admin)', params: RoleUserParams, response: Role, errors: [403, 404] }),
  rolesUsersRemove: defineRoute({ ...r, id: 'roles.users.remove', method: 'DELETE', path: '/api/v1/roles/{name}/users/{id}', summary: 'Take this role from a user (admin)', params: RoleUserParams, response: Role, errors: [403, 404] }),
  apiKeysList: defineRoute({ ...k, id: 'api-keys.list', method: 'GET', path: '/api/v1/api-keys', summary: 'API keys (own; admin: all)', query: Paging, response: T.Array(ApiKey) }),
  apiKeysGet: defineRoute({ ...k, id: 'api-keys.get', method: 'GET', path: '/api/v1/api-keys/{id}', summary: 'One API key (without the key)', params: ById, response: ApiKey, errors: [404] }),
  apiKeysCreate: defineRoute({
    ...k, id: 'api-keys.create', method: 'POST', path: '/api/v1/api-keys', summary: 'Mint an API key; the key is shown once. Grants wider than the owner holds answer 403', status: 201,
    response: ApiKeyCreated, errors: [403, 422],
    body: ApiKeyCreateBody,
  }),
  apiKeysDelete: defineRoute({ ...k, id: 'api-keys.delete', method: 'DELETE', path: '/api/v1/api-keys/{id}', summary: 'Revoke an API key (stops working at once, everywhere)', params: ById, status: 204, errors: [404] }),
}

export function accessRoutes(): RouteDef[] {
  return Object.values(ACCESS_ROUTES)
}
