import { Type as T } from '@sinclair/typebox'
import { Dependency, DependencyById, DependencyCreateBody, DependencyListQuery } from '../../schemas/dependencies.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'

/* Python package dependencies: requested by users, approved by an admin. The shapes live in schemas/dependencies.ts. */

const m = { surface: 'management', auth: true, target: 'rpc' } as const
const tags = ['Dependencies']

export const DEPENDENCY_ROUTES = {
  list: defineRoute({
    ...m,
    tags,
    id: 'dependencies.list',
    method: 'GET',
    path: '/api/v1/dependencies',
    summary: 'Requested Python packages and their status (admin)',
    errors: [403],
    query: DependencyListQuery,
    response: T.Array(Dependency),
  }),
  create: defineRoute({
    ...m,
    tags,
    id: 'dependencies.create',
    method: 'POST',
    path: '/api/v1/dependencies',
    summary:
      'Request a Python package (pending until an admin approves); 422 `dependency.not_allowed` when installation is disabled or the name is not in ALLOWED_PACKAGES',
    status: 201,
    body: DependencyCreateBody,
    response: Dependency,
    errors: [403, 409, 422],
  }),
  get: defineRoute({
    ...m,
    tags,
    id: 'dependencies.get',
    method: 'GET',
    path: '/api/v1/dependencies/{id}',
    summary: 'One package request and its status (its requester or an admin)',
    params: DependencyById,
    response: Dependency,
    errors: [404],
  }),
  approve: defineRoute({
    ...m,
    tags,
    id: 'dependencies.approve',
    method: 'POST',
    path: '/api/v1/dependencies/{id}/approve',
    summary: 'Approve a package (admin); installed at the next container reload',
    params: DependencyById,
    response: Dependency,
    errors: [403, 404, 422],
  }),
  reject: defineRoute({
    ...m,
    tags,
    id: 'dependencies.reject',
    method: 'POST',
    path: '/api/v1/dependencies/{id}/reject',
    summary: 'Reject a package (admin); an installed one leaves at the next reload',
    params: DependencyById,
    response: Dependency,
    errors: [403, 404],
  }),
  delete: defineRoute({
    ...m,
    tags,
    id: 'dependencies.delete',
    method: 'DELETE',
    path: '/api/v1/dependencies/{id}',
    summary: 'Delete a package request (admin)',
    params: DependencyById,
    status: 204,
    errors: [403, 404],
  }),
}

export function dependencyRoutes(): RouteDef[] {
  return Object.values(DEPENDENCY_ROUTES)
}
