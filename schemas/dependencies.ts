import { Type as T, type Static } from '@sinclair/typebox'
import { Nullable, Uuid } from './common.ts'

/* Python package dependencies: requested by users, approved by an admin. */
export const DependencyStatus = T.Union([
  T.Literal('pending'),
  T.Literal('approved'),
  T.Literal('rejected'),
  T.Literal('installed'),
  T.Literal('failed'),
])
export type DependencyStatus = Static<typeof DependencyStatus>

export const Dependency = T.Object(
  {
    id: Uuid,
    package_name: T.String({ description: 'PEP 503 normalized name' }),
    version: Nullable(
      T.String({ description: 'PEP 440 specifier set, e.g. `==1.2.0` or `>=1,<2`; null = any version' }),
    ),
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
export type Dependency = Static<typeof Dependency>

export const DependencyById = T.Object({ id: Uuid })
export const DependencyListQuery = T.Object({ status: T.Optional(DependencyStatus) })
export const DependencyCreateBody = T.Object(
  {
    package_name: T.String({ minLength: 1, maxLength: 100, description: 'a PEP 508 project name' }),
    version: T.Optional(
      Nullable(
        T.String({
          maxLength: 100,
          description: 'PEP 440 specifier set without spaces (`==1.2.0`, `>=1,<2`); a bare version means `==`',
        }),
      ),
    ),
  },
  { additionalProperties: false },
)
