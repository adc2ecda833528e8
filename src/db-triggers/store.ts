import { Type as T } from '@sinclair/typebox'
import type { CommonQueryMethods } from 'slonik'
import { DbTrigger } from '../../schemas/db-triggers.ts'
import { sql } from '../platform/db.ts'
import { anyRows, maybeRow, rowType } from '../platform/typed-rows.ts'

/*
 * The `db_triggers` table (migration 0017): the trigger's settings, what the API shows, and the
 * poll's own columns (bookmark, pending batch, fence), which only poll.ts writes — every such write
 * is conditional on the fence (`fence <= $fence`).
 */
const TriggerRow = rowType(DbTrigger)
const columns = sql.unsafe`id, name, owner_id, database_connection_id, schema_name, table_name, operations, created_column, function_namespace, function_name, poll_column,
  poll_interval_seconds, batch_size, description, is_active, last_poll_value, error_message, last_polled_at, version, created_at, updated_at`

/** What the poll reads besides the API's fields. */
const PollRow = rowType(
  T.Object(
    {
      ...DbTrigger.properties,
      bookmark_set: T.Boolean(),
      pending_until: T.Union([T.String(), T.Null()]),
      bookmark_epoch: T.Integer(),
      fence: T.Integer(),
    },
    { title: 'database trigger' },
  ),
)

/**
 * A row with its connection's name (config names the connection, not its id), who manages it
 * (config, a package, or null: made by hand) and the config body's checksum.
 */
const ManagedRow = rowType(
  T.Object(
    {
      ...DbTrigger.properties,
      database_connection: T.Union([T.String(), T.Null()]),
      managed_by: T.Union([T.String(), T.Null()]),
      checksum: T.Union([T.String(), T.Null()]),
    },
    { title: 'managed database trigger' },
  ),
)
export type ManagedDbTriggerRow = typeof ManagedRow.schema.static

/** Who manages a row written by config or a package; null (an API write) detaches it. */
export interface Managed {
  by: string
  checksum: string
}

/*
 * Config names a trigger by its name alone (a file names no owner): of the triggers of that name,
 * the one config or a package manages (at most one: migration 0034), else the oldest.
 */
const configOrder = sql.unsafe`order by name, (managed_by is not null) desc, created_at, id`

const ConnectionRow = rowType(
  T.Object({ id: T.String(), connection_type: T.Union([T.String(), T.Null()]) }, { title: 'database connection' }),
)

export interface DbTriggerFields {
  database_connection_id: string
  schema_name: string
  table_name: string
  operations: string[]
  created_column: string | null
  function_namespace: string
  function_name: string
  poll_column: string
  poll_interval_seconds: number
  batch_size: number
  description: string
  is_active: boolean
}

/** Whether changing from `a` to `b` points the trigger at other rows (the bookmark starts again). */
export const movesBookmark = (a: DbTriggerFields, b: DbTriggerFields): boolean =>
  a.database_connection_id !== b.database_connection_id ||
  a.schema_name !== b.schema_name ||
  a.table_name !== b.table_name ||
  a.poll_column !== b.poll_column

type Q = Pick<CommonQueryMethods, 'any' | 'maybeOne' | 'query'>

/** `db`: the pool, or the transaction of a config apply. */
export function dbTriggerStore(db: Q) {
  return {
    byName: (ownerId: string, name: string) =>
      maybeRow(
        db,
        TriggerRow,
        sql.unsafe`select ${columns} from db_triggers where owner_id = ${ownerId}::uuid and name = ${name}`,
      ),
    list: (ownerId: string | null, limit: number, offset: number) =>
      anyRows(
        db,
        TriggerRow,
        sql.unsafe`select ${columns} from db_triggers ${ownerId === null ? sql.unsafe`` : sql.unsafe`where owner_id = ${ownerId}::uuid`} order by name, created_at limit ${limit} offset ${offset}`,
      ),
    all: () => anyRows(db, TriggerRow, sql.unsafe`select ${columns} from db_triggers`),
    /** One row per name, as config addresses them (`configOrder`), with its connection's name, manager and checksum. */
    allForConfig: () =>
      anyRows(
        db,
        ManagedRow,
        sql.unsafe`select distinct on (name) ${columns}, managed_by, checksum,
          (select c.name from resources c where c.id = database_connection_id) as database_connection
        from db_triggers ${configOrder}`,
      ),
    /** The trigger config means by `name` (`configOrder`), or null. */
    byConfigName: (name: string) =>
      maybeRow(
        db,
        TriggerRow,
        sql.unsafe`select ${columns} from db_triggers where name = ${name} ${configOrder} limit 1`,
      ),
    /** null when the owner already has a trigger of this name. `managed`: config's or a package's (null: made through the API). */
    create: (ownerId: string, name: string, f: DbTriggerFields, managed: Managed | null = null) =>
      maybeRow(
        db,
        TriggerRow,
        sql.unsafe`insert into db_triggers (name, owner_id, database_connection_id, schema_name, table_name, operations, created_column, function_namespace, function_name, poll_column, poll_interval_seconds, batch_size, description, is_active, managed_by, checksum)
        values (${name}, ${ownerId}::uuid, ${f.database_connection_id}::uuid, ${f.schema_name}, ${f.table_name}, ${sql.array(f.operations, 'text')}, ${f.created_column}, ${f.function_namespace}, ${f.function_name}, ${f.poll_column},
          ${f.poll_interval_seconds}, ${f.batch_size}, ${f.description}, ${f.is_active}, ${managed?.by ?? null}, ${managed?.checksum ?? null})
        on conflict (owner_id, name) do nothing returning ${columns}`,
      ),
    /**
     * `reset`: the trigger now points at other rows: the bookmark starts again (a new first
     * activation). `managed`: null (an edit through the API) detaches it from config or its package.
     */
    update: (id: string, f: DbTriggerFields, reset: boolean, managed: Managed | null = null) =>
      maybeRow(
        db,
        TriggerRow,
        sql.unsafe`update db_triggers set database_connection_id = ${f.database_connection_id}::uuid, schema_name = ${f.schema_name}, table_name = ${f.table_name},
        operations = ${sql.array(f.operations, 'text')}, created_column = ${f.created_column}, function_namespace = ${f.function_namespace}, function_name = ${f.function_name}, poll_column = ${f.poll_column},
        poll_interval_seconds = ${f.poll_interval_seconds}, batch_size = ${f.batch_size}, description = ${f.description}, is_active = ${f.is_active},
        ${reset ? sql.unsafe`last_poll_value = null, bookmark_set = false, pending_until = null, bookmark_epoch = bookmark_epoch + 1, error_message = null,` : sql.unsafe``}
        managed_by = ${managed?.by ?? null}, checksum = ${managed?.checksum ?? null}, version = version + 1, updated_at = now() where id = ${id}::uuid returning ${columns}`,
      ),
    /** The id and type of the database connection named `name` (seen inside a config apply's transaction), or null. */
    connectionByName: (name: string) =>
      maybeRow(
        db,
        ConnectionRow,
        sql.unsafe`select id, spec->>'connection_type' as connection_type from resources where kind = 'database_connection' and name = ${name} order by created_at limit 1`,
      ),
    delete: (id: string) => db.query(sql.unsafe`delete from db_triggers where id = ${id}::uuid`),
  }
}

export type DbTriggerStore = ReturnType<typeof dbTriggerStore>

/** The poll's reads and fenced writes, on the connection that holds the trigger's poll lock. */
export function pollRows(q: Q, id: string, fence: number) {
  /** Runs a fenced update; false when a newer lease has polled the trigger since. */
  const fenced = async (set: ReturnType<typeof sql.unsafe>): Promise<boolean> => {
    const r = await q.query(sql.unsafe`update db_triggers set ${set} where id = ${id}::uuid and fence <= ${fence}`)
    return r.rowCount > 0
  }
  return {
    load: () =>
      maybeRow(
        q,
        PollRow,
        sql.unsafe`select ${columns}, bookmark_set, pending_until, bookmark_epoch, fence from db_triggers where id = ${id}::uuid`,
      ),
    /** Takes the trigger for this lease revision (refused when a newer one has). */
    claim: () => fenced(sql.unsafe`fence = ${fence}`),
    initialize: (bookmark: string | null) =>
      fenced(
        sql.unsafe`last_poll_value = ${bookmark}, bookmark_set = true, pending_until = null, error_message = null, last_polled_at = now()`,
      ),
    /** Records the batch before its job is enqueued (a retried poll reads exactly it again). */
    pending: (until: string) => fenced(sql.unsafe`pending_until = ${until}`),
    /** The batch's job was accepted: the bookmark moves past it. */
    advance: (until: string) =>
      fenced(
        sql.unsafe`last_poll_value = ${until}, pending_until = null, error_message = null, last_polled_at = now()`,
      ),
    idle: () => fenced(sql.unsafe`error_message = null, last_polled_at = now()`),
    failed: (message: string) => fenced(sql.unsafe`error_message = ${message}, last_polled_at = now()`),
  }
}
