import './formats.ts'
import { Type as T, type TSchema } from '@sinclair/typebox'

/*
 * Shapes shared by every resource kind. No I/O here: the gateway, the resource service, the
 * OpenAPI documents and config apply all read these.
 */
export const NAME_PATTERN = '^[a-z0-9][a-z0-9_-]{0,62}$'
const SEGMENT = '[a-z0-9][a-z0-9_-]{0,62}'

export const Name = T.String({
  pattern: NAME_PATTERN,
  maxLength: 63,
  description: 'lowercase letters, digits, - and _; at most 63 characters',
})
export const Namespace = T.String({
  pattern: NAME_PATTERN,
  maxLength: 63,
  default: 'default',
  description: 'namespace (default `default`)',
})
export const Uuid = T.String({ format: 'uuid' })
export const Timestamp = T.String({ format: 'date-time' })

/** An exact `<namespace>/<name>` reference. */
export const Ref = T.String({ pattern: `^${SEGMENT}/${SEGMENT}$`, maxLength: 127, description: '`<namespace>/<name>`' })
/** A reference that may use the wildcards `<namespace>/*` and `*\/*`. */
export const RefPattern = T.String({
  pattern: `^(${SEGMENT}/(${SEGMENT}|\\*)|\\*/\\*)$`,
  maxLength: 127,
  description: '`<namespace>/<name>`, `<namespace>/*` or `*/*`',
})
export const Access = T.Union([T.Literal('readonly'), T.Literal('readwrite')])
export const JsonSchemaObject = T.Record(T.String(), T.Unknown(), { description: 'a JSON Schema', default: {} })
export const Icon = T.Union([T.String({ pattern: '^(url:https?://|collection:).+', maxLength: 2048 }), T.Null()], {
  default: null,
  description: '`url:<image_url>` or `collection:<path>`',
})
export const Nullable = <S extends TSchema>(s: S) => T.Union([s, T.Null()])

export const ErrorBody = T.Object(
  {
    detail: T.String(),
    code: T.String({ description: 'stable dotted error code, e.g. resource.not_found' }),
    errors: T.Optional(T.Array(T.Object({ path: T.String(), message: T.String() }))),
  },
  { $id: 'ErrorBody', description: 'the one error body of the platform' },
)

export const ListQuery = T.Object(
  {
    namespace: T.Optional(T.String({ maxLength: 2000, description: 'comma-separated namespaces to include' })),
    limit: T.Optional(T.Integer({ minimum: 1, maximum: 1000, default: 100 })),
    offset: T.Optional(T.Integer({ minimum: 0, default: 0 })),
  },
  { additionalProperties: false },
)

export const Empty = T.Object({}, { additionalProperties: false })
