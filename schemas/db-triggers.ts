import { Type as T, type Static } from '@sinclair/typebox'
import { Name, Namespace, Nullable, Timestamp, Uuid } from './common.ts'

/*
 * Database triggers: the HTTP bodies, the row, the function input, and the poll
 * request the db-trigger actor sends the resource service (`svc.dbtriggers.poll`).
 */

/**
 * A Postgres identifier as the trigger names it (schema, table, column): any text of 1–63
 * characters without NUL. It is never written into SQL as given: it is looked up in
 * information_schema as a bound value and then quoted ("…" with "" escapes).
 */
export const SqlIdentifier = T.String({
  minLength: 1,
  maxLength: 63,
  pattern: '^[^\\x00]+$',
  description: 'a Postgres identifier as it is spelled in the catalog (case-sensitive; quoted when used)',
})
/** What a poll can see. DELETE cannot be detected by polling and is refused. */
export const DbTriggerOperation = T.Union([T.Literal('INSERT'), T.Literal('UPDATE')])
export const DbTriggerOperations = T.Array(DbTriggerOperation, {
  minItems: 1,
  maxItems: 2,
  uniqueItems: true,
  description:
    'INSERT, UPDATE or both. A single one needs the table to tell them apart: a poll column filled by a sequence or identity (grows on INSERT only: INSERT), or a `created_column` (equal to the poll column: INSERT, else UPDATE); otherwise 422 `db_trigger.operations_undetectable`. Default: what the table can tell (INSERT for a sequence column, both otherwise). DELETE cannot be detected',
})
/** A column set once at INSERT to the poll column's value (e.g. created_at beside an updated_at poll column). */
export const CreatedColumn = Nullable(
  T.String({
    minLength: 1,
    maxLength: 63,
    pattern: '^[^\\x00]+$',
    description:
      'a column the row takes at INSERT with the same value as the poll column and keeps (e.g. `created_at` beside an `updated_at` poll column, both `default now()`): a row whose two values are equal was inserted, otherwise updated; null: none',
  }),
)
export const PollInterval = T.Integer({
  minimum: 1,
  maximum: 3600,
  description: 'seconds between polls (1–3600, default 10)',
})
export const BatchSize = T.Integer({
  minimum: 1,
  maximum: 10000,
  description: 'rows per function call at most (1–10000, default 100)',
})

export const DbTriggerCreateBody = T.Object(
  {
    name: Name,
    database_connection_id: Uuid,
    schema_name: T.Optional(SqlIdentifier),
    table_name: SqlIdentifier,
    operations: T.Optional(DbTriggerOperations),
    created_column: T.Optional(CreatedColumn),
    function_namespace: T.Optional(Namespace),
    function_name: Name,
    poll_column: SqlIdentifier,
    poll_interval_seconds: T.Optional(PollInterval),
    batch_size: T.Optional(BatchSize),
    description: T.Optional(T.String({ maxLength: 4000 })),
    is_active: T.Optional(T.Boolean()),
  },
  { additionalProperties: false, title: 'DbTriggerCreate' },
)

export const DbTriggerUpdateBody = T.Object(
  {
    database_connection_id: T.Optional(Uuid),
    schema_name: T.Optional(SqlIdentifier),
    table_name: T.Optional(SqlIdentifier),
    operations: T.Optional(DbTriggerOperations),
    created_column: T.Optional(CreatedColumn),
    function_namespace: T.Optional(Namespace),
    function_name: T.Optional(Name),
    poll_column: T.Optional(SqlIdentifier),
    poll_interval_seconds: T.Optional(PollInterval),
    batch_size: T.Optional(BatchSize),
    description: T.Optional(T.String({ maxLength: 4000 })),
    is_active: T.Optional(T.Boolean()),
  },
  { additionalProperties: false, title: 'DbTriggerUpdate' },
)

export const DbTrigger = T.Object(
  {
    id: Uuid,
    name: T.String(),
    owner_id: Uuid,
    database_connection_id: Uuid,
    schema_name: T.String(),
    table_name: T.String(),
    operations: T.Array(T.String()),
    created_column: Nullable(T.String()),
    function_namespace: T.String(),
    function_name: T.String(),
    poll_column: T.String(),
    poll_interval_seconds: T.Integer(),
    batch_size: T.Integer(),
    description: T.String(),
    is_active: T.Boolean(),
    last_poll_value: Nullable(
      T.String({ description: "the bookmark (the poll column's value as text); null until the first activation" }),
    ),
    error_message: Nullable(T.String({ description: "the last poll's error; null after a poll that worked" })),
    last_polled_at: Nullable(Timestamp),
    version: T.Integer(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'DbTrigger' },
)
export type DbTrigger = Static<typeof DbTrigger>

export const DbTriggerParams = T.Object({ name: Name })
export const DbTriggerListQuery = T.Object(
  {
    limit: T.Optional(T.Integer({ minimum: 1, maximum: 1000 })),
    offset: T.Optional(T.Integer({ minimum: 0 })),
    all: T.Optional(T.Boolean({ description: "admins: every user's database triggers (default: your own)" })),
  },
  { additionalProperties: false },
)
export const DbTriggerOwnerQuery = T.Object(
  {
    owner_id: T.Optional(
      T.String({ format: 'uuid', description: "another user's trigger (needs the :all permission)" }),
    ),
  },
  { additionalProperties: false },
)

/** The function input of one batch. */
export const DbTriggerInput = T.Object(
  {
    table: T.String({ description: '<schema>.<table>' }),
    operation: T.Union([T.Literal('INSERT'), T.Literal('UPDATE'), T.Literal('CHANGE')], {
      description:
        "the batch's operation: INSERT or UPDATE when every row is one, CHANGE when the rows are mixed or the table cannot tell",
    }),
    rows: T.Array(T.Record(T.String(), T.Unknown())),
    row_operations: T.Optional(
      T.Array(T.Union([T.Literal('INSERT'), T.Literal('UPDATE')]), {
        description: 'with a created_column: the operation of each row, in the order of `rows`',
      }),
    ),
    poll_column: T.String(),
    count: T.Integer(),
    timestamp: Timestamp,
  },
  { title: 'DbTriggerInput' },
)
export type DbTriggerInput = Static<typeof DbTriggerInput>

/** The db-trigger actor asks the resource service for one poll (NATS request `svc.dbtriggers.poll`). */
export const DbTriggerPoll = T.Object(
  { trigger_id: Uuid, fence: T.Integer({ minimum: 0, description: "the actor's lease revision" }) },
  { additionalProperties: false },
)
export type DbTriggerPoll = Static<typeof DbTriggerPoll>

/**
 * The service's answer. `status`:
 *  - `initialized`: the bookmark was set to MAX(poll_column) (first activation, no backfill);
 *  - `fired`: one batch enqueued (`rows`, `job_id`), `more` when rows may be waiting behind it;
 *  - `idle`: nothing new; `held`: new rows exist but a transaction still open may commit rows
 *    before them (docs/triggers.md#database-triggers), poll again shortly; `busy`: another poll of this trigger runs;
 *  - `inactive`, `gone`: stop polling; `stale`: a newer lease polled it (this host lost its lease).
 * `ok: false`: the poll failed (`error`, also written to error_message): back off.
 */
export const DbTriggerPollReply = T.Union([
  T.Object({
    ok: T.Literal(true),
    status: T.Union(
      ['initialized', 'fired', 'idle', 'held', 'busy', 'inactive', 'gone', 'stale'].map((s) => T.Literal(s)),
    ),
    rows: T.Integer({ minimum: 0 }),
    more: T.Boolean(),
    job_id: Nullable(T.String()),
  }),
  T.Object({ ok: T.Literal(false), error: T.String() }),
])
export type DbTriggerPollReply = Static<typeof DbTriggerPollReply>
