import { Type as T } from '@sinclair/typebox'
import { Nullable, Uuid } from '../../schemas/common.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'

/* Python package dependencies: requested by users, approved by an admin (SPEC §4.10). */
export const DependencyStatus = T.Union([T.Literal('pending'), T.Literal('approved'), T.Literal('rejected'), T.Literal('installed'), T.Literal('failed')])
const Dependency = T.Object(
  {
    id: Uuid,
    package_name: T.String({ description: 'PEP 503 normalized name' }),
    version: Nullable(T.String({ description: 'PEP 440 specifier set, e.g. `==1.2.0` or `>=1,<2`; null = any version' })),
    status: DependencyStatus,
    error: Nullable(T.String({ description: 'the tail of pip’s output when the install failed' })),
    requested_by: Nullable(Uuid),
    approved_by: Nullable(Uuid),
    created_at: T.String(),
    updated_at: T.String(),
    approved_at: Nullable(T.String()),
    installed_at: Nullable(T.String()),
  },
  { title: 'Dependency' },
)
const ById = T.Object({ id: Uuid })

const m = { surface: 'management', auth: true, target: 'rpc' } as const
const tags = ['Dependencies']

export const DEPENDENCY_ROUTES = {
  list: defineRoute({ ...m, tags, id: 'dependencies.list', method: 'GET', path: '/api/v1/dependencies', summary: 'Requested Python packages and their status (admin)', errors: [403], query: T.Object({ status: T.Optional(DependencyStatus) }), response: T.Array(Dependency) }),
  create: defineRoute({
    ...m,
    tags,
    id: 'dependencies.create',
    method: 'POST',
    path: '/api/v1/dependencies',
    summary: 'Request a Python package (pending until an admin approves); 422 `dependency.not_allowed` when installation is disabled or the name is not in ALLOWED_PACKAGES',
    status: 201,
    body: T.Object(
      {
        package_name: T.String({ minLength: 1, maxLength: 100, description: 'a PEP 508 project name' }),
        version: T.Optional(Nullable(T.String({ maxLength: 100, description: 'PEP 440 specifier set without spaces (`==1.2.0`, `>=1,<2`); a bare version means `==`' }))),
      },
      { additionalProperties: false },
    ),
    response: Dependency,
    errors: [403, 409, 422],
  }),
  get: defineRoute({ ...m, tags, id: 'dependencies.get', method: 'GET', path: '/api/v1/dependencies/{id}', summary: 'One package request and its status (its requester or an admin)', params: ById, response: Dependency, errors: [404] }),
  approve: defineRoute({ ...m, tags, id: 'dependencies.approve', method: 'POST', path: '/api/v1/dependencies/{id}/approve', summary: 'Approve a package (admin); installed at the next container reload', params: ById, response: Dependency, errors: [403, 404, 422] }),
  reject: defineRoute({ ...m, tags, id: 'dependencies.reject', method: 'POST', path: '/api/v1/dependencies/{id}/reject', summary: 'Reject a package (admin); an installed one leaves at the next reload', params: ById, response: Dependency, errors: [403, 404] }),
  delete: defineRoute({ ...m, tags, id: 'dependencies.delete', method: 'DELETE', path: '/api/v1/dependencies/{id}', summary: 'Delete a package request (admin)', params: ById, status: 204, errors: [403, 404] }),
}

export function dependencyRoutes(): RouteDef[] {
  return Object.values(DEPENDENCY_ROUTES)
}
