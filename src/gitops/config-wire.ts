import { Type as T } from '@sinclair/typebox'

/*
 * The request and answer shapes of the config routes (`/api/v1/config/*`): the OpenAPI documents
 * come from them. The config text travels as a JSON string; its size is CONFIG_MAX_BYTES's to
 * limit (413 `config.too_large`), not the schema's.
 */
const ConfigText = T.String({ description: 'the PlatformConfig YAML document (docs/gitops.md)' })

export const ConfigValidateBody = T.Object({ config: ConfigText }, { additionalProperties: false })

const Issue = T.Object({
  path: T.String({ description: 'where, as `spec.agents[2].model`' }),
  message: T.String(),
  line: T.Optional(T.Integer({ minimum: 1 })),
  column: T.Optional(T.Integer({ minimum: 1 })),
})

export const ConfigValidateResult = T.Object(
  {
    valid: T.Boolean(),
    errors: T.Array(Issue),
    warnings: T.Array(T.String()),
    code: T.Optional(T.String({ description: 'the error code of the first failed step, when not valid' })),
  },
  { title: 'ConfigValidation' },
)

export const ConfigApplyBody = T.Object(
  {
    config: ConfigText,
    dryRun: T.Optional(T.Boolean({ default: false, description: 'answer the plan, write nothing' })),
    force: T.Optional(
      T.Boolean({
        default: false,
        description: 'take over resources created through the API or managed by a package',
      }),
    ),
  },
  { additionalProperties: false },
)

export const ApplyResultSchema = T.Object(
  {
    success: T.Boolean(),
    summary: T.Object({
      created: T.Integer(),
      updated: T.Integer(),
      unchanged: T.Integer(),
      deleted: T.Integer(),
    }),
    changes: T.Array(
      T.Object({
        action: T.Union([T.Literal('created'), T.Literal('updated'), T.Literal('deleted'), T.Literal('unchanged')]),
        resourceType: T.String({ description: 'the kind (`agent`, `webhook`, …)' }),
        resourceName: T.String({ description: '`namespace/name`, or the name of a named kind' }),
        fields: T.Optional(T.Unknown({ description: 'created / updated: the fields set or changed (secrets masked)' })),
      }),
    ),
    errors: T.Array(Issue),
    warnings: T.Array(T.String()),
    code: T.Optional(T.String({ description: 'when refused: the error code (`config.dangling_reference`, …)' })),
  },
  { title: 'ConfigApplyResult' },
)
