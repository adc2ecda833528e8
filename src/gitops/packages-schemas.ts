import { Type as T } from '@sinclair/typebox'
import { Name, Namespace, Timestamp, Uuid } from '../../schemas/common.ts'
import { VariableDeclaration } from './package-schema.ts'

/* The wire shapes of the package routes (packages-routes.ts). */

/** A variable's value as given at install: text, or a boolean for `boolean` variables (numbers are taken as their text). */
const VariableValues = T.Record(T.String(), T.Union([T.String(), T.Boolean(), T.Number()]), {
  description: 'the value of each declared variable, by name',
})

export const PackageSourceBody = T.Object(
  {
    source: T.String({ minLength: 1, description: 'the package YAML (`kind: PlatformPackage`)' }),
    variables: T.Optional(VariableValues),
  },
  { additionalProperties: false },
)

/** The answer of an apply (dry run or not), as `POST /api/v1/config/apply` gives it. */
export const ApplyAnswer = T.Object({
  success: T.Boolean(),
  summary: T.Object({ created: T.Integer(), updated: T.Integer(), unchanged: T.Integer(), deleted: T.Integer() }),
  changes: T.Array(
    T.Object({
      action: T.Union([T.Literal('created'), T.Literal('updated'), T.Literal('deleted'), T.Literal('unchanged')]),
      resourceType: T.String(),
      resourceName: T.String(),
      fields: T.Optional(T.Unknown()),
    }),
  ),
  errors: T.Array(T.Object({ path: T.String(), message: T.String() }, { additionalProperties: true })),
  warnings: T.Array(T.String()),
})

export const PackagePreview = T.Composite([
  ApplyAnswer,
  T.Object({
    variables: T.Array(VariableDeclaration, { description: 'the declarations of spec.variables' }),
    requires_input: T.Boolean({ description: 'a required variable has neither a value nor a default' }),
  }),
])

export const PackageDependency = T.Object({ package_name: T.String(), version: T.Union([T.String(), T.Null()]) })

/** An installed package, as recorded (its resources carry `managed_by: pkg:<name>`). */
export const InstalledPackage = T.Object({
  id: Uuid,
  name: Name,
  version: T.String(),
  description: T.String(),
  author: T.Union([T.String(), T.Null()]),
  url: T.Union([T.String(), T.Null()]),
  values: T.Record(T.String(), T.String(), { description: 'the variable values of the last install; secrets as ***' }),
  dependencies: T.Array(PackageDependency),
  installed_by: T.Union([Uuid, T.Null()]),
  installed_at: Timestamp,
  updated_at: Timestamp,
})

export const PackageDetails = T.Composite([
  InstalledPackage,
  T.Object({
    resources: T.Array(
      T.Object({ type: T.String({ description: 'the kind' }), name: T.String({ description: 'its key' }) }),
      {
        description: 'the items managed by the package now (detached ones are no longer listed)',
      },
    ),
  }),
])

export const PackageInstallAnswer = T.Object({ package: InstalledPackage, apply: ApplyAnswer })

export const PackageByName = T.Object({ name: Name })

export const PackageCreateBody = T.Object(
  {
    name: Name,
    version: T.String({ minLength: 1, maxLength: 100 }),
    description: T.Optional(T.String({ maxLength: 4000 })),
    author: T.Optional(T.String({ maxLength: 200 })),
    url: T.Optional(T.String({ maxLength: 2000 })),
    resources: T.Array(
      T.Object(
        {
          type: T.String({ description: 'the kind: agent, function, skill, connector, webhook, schedule, …' }),
          namespace: T.Optional(Namespace),
          name: T.String({ minLength: 1, maxLength: 2000, description: 'the name (a webhook: its path)' }),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 1000 },
    ),
  },
  { additionalProperties: false },
)

export const PackageYaml = T.Object({ yaml: T.String() })
