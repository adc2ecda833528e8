import {
  NamespaceByName,
  NamespaceCreateBody,
  NamespaceList,
  NamespaceListQuery,
  NamespaceMemberParams,
  NamespaceRecord,
} from '../../schemas/namespaces.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'

/* Namespaces and who may create in them (docs/architecture.md; a namespace has no owner, only creators). The shapes live in schemas/namespaces.ts. */

const m = { surface: 'management', auth: true, target: 'rpc' } as const
const tags = ['Namespaces']

export const NAMESPACE_ROUTES = {
  list: defineRoute({
    ...m,
    tags,
    id: 'namespaces.list',
    method: 'GET',
    path: '/api/v1/namespaces',
    summary: 'Namespaces you own or were granted (admin: all)',
    query: NamespaceListQuery,
    response: NamespaceList,
  }),
  create: defineRoute({
    ...m,
    tags,
    id: 'namespaces.create',
    method: 'POST',
    path: '/api/v1/namespaces',
    summary:
      'Claim a namespace nobody holds yet (it is also claimed by the first resource created in it); 409 when it is held',
    status: 201,
    body: NamespaceCreateBody,
    response: NamespaceRecord,
    errors: [403, 409, 422],
  }),
  get: defineRoute({
    ...m,
    tags,
    id: 'namespaces.get',
    method: 'GET',
    path: '/api/v1/namespaces/{name}',
    summary: 'One namespace (its owner, members and admins)',
    params: NamespaceByName,
    response: NamespaceRecord,
    errors: [404],
  }),
  delete: defineRoute({
    ...m,
    tags,
    id: 'namespaces.delete',
    method: 'DELETE',
    path: '/api/v1/namespaces/{name}',
    summary: 'Release an empty namespace (owner or admin); 409 while resources live in it',
    params: NamespaceByName,
    status: 204,
    errors: [404, 409],
  }),
  addMember: defineRoute({
    ...m,
    tags,
    id: 'namespaces.members.add',
    method: 'PUT',
    path: '/api/v1/namespaces/{name}/members/{user_id}',
    summary:
      "Grant the namespace to a user (owner or admin): the user may create in it, and the owner's agents' wildcards include what they create there. The member calling this for themselves accepts the grant: then the member's own agents' wildcards include the namespace too",
    params: NamespaceMemberParams,
    response: NamespaceRecord,
    errors: [404],
  }),
  removeMember: defineRoute({
    ...m,
    tags,
    id: 'namespaces.members.remove',
    method: 'DELETE',
    path: '/api/v1/namespaces/{name}/members/{user_id}',
    summary: 'Take the namespace back from a member (owner or admin)',
    params: NamespaceMemberParams,
    response: NamespaceRecord,
    errors: [404],
  }),
}

export function namespaceRoutes(): RouteDef[] {
  return Object.values(NAMESPACE_ROUTES)
}
