import { Type as T } from '@sinclair/typebox'
import { JsonSchemaObject, Uuid } from './common.ts'

/*
 * Saved query fields and the execute wire (`{input}` →
 * `{operation, rows, row_count, affected_rows?, duration_ms}`). Placeholders are written
 * `:param_name`; `:user_id` and `:user_email` are always the caller's.
 */
export const QuerySpec = T.Object(
  {
    database_connection_id: Uuid,
    description: T.String({ default: '', maxLength: 4000, description: 'shown to the LLM as the tool description' }),
    operation: T.Union([T.Literal('read'), T.Literal('write')], { default: 'read' }),
    sql: T.String({
      minLength: 1,
      maxLength: 100_000,
      description: 'placeholders written :param_name (bound, never interpolated)',
    }),
    input_schema: JsonSchemaObject,
    output_schema: JsonSchemaObject,
    timeout_ms: T.Integer({
      default: 5000,
      minimum: 1,
      description: 'statement timeout (clamped to QUERY_TIMEOUT_MS_MAX)',
    }),
    max_rows: T.Integer({
      default: 1000,
      minimum: 1,
      description: 'rows returned at most by a read (clamped to QUERY_MAX_ROWS_MAX)',
    }),
  },
  { additionalProperties: false },
)

export const QueryParams = T.Object({
  namespace: T.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,62}$', maxLength: 63 }),
  name: T.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,62}$', maxLength: 63 }),
})

export const QueryExecuteBody = T.Object(
  {
    input: T.Record(T.String(), T.Unknown(), {
      default: {},
      description: "the query's parameters, checked against its input_schema",
    }),
  },
  { additionalProperties: false, title: 'QueryExecute' },
)

export const QueryExecuteResult = T.Object(
  {
    operation: T.Union([T.Literal('read'), T.Literal('write')]),
    rows: T.Array(T.Record(T.String(), T.Unknown())),
    row_count: T.Integer({ description: 'rows returned' }),
    affected_rows: T.Optional(T.Union([T.Integer(), T.Null()], { description: 'write: rows changed' })),
    truncated: T.Boolean({
      description: 'read: more rows existed than max_rows (the database stopped at max_rows + 1)',
    }),
    duration_ms: T.Number(),
  },
  { title: 'QueryExecuteResult' },
)
