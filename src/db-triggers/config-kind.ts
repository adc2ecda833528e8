import { Type as T } from '@sinclair/typebox'
import { Name } from '../../schemas/common.ts'
import { DbTriggerCreateBody } from '../../schemas/db-triggers.ts'
import { can, type Principal } from '../auth/principal.ts'
import { connectionPools, type ConnectionPools } from '../data/pools.ts'
import type { AfterCommit, ConfigCurrent, ConfigKind, ConfigTx } from '../feature/config-kinds.ts'
import { bodyChecksum, bodyIssues, issuesOf } from '../feature/config-kind-support.ts'
import type { ServiceContext } from '../feature/define.ts'
import { AppError, conflict, invalid, notFound } from '../kernel/errors.ts'
import { databaseConnectionKind } from '../kinds/database-connection/kind.ts'
import { announce, announceRemoved, fieldsOf } from './handlers.ts'
import { defaultOperations, inspectAtSave, operationPlan, type TableFacts } from './operations.ts'
import { dbTriggerStore, movesBookmark, type DbTriggerFields, type ManagedDbTriggerRow } from './store.ts'

/*
 * Database triggers as a config kind (section `databaseTriggers`). Key: the name, addressed as
 * schedules are (src/schedules/config-kind.ts: a name unique among the managed triggers, the
 * managed one else the oldest of a name; created owned by the principal applying, an update keeps
 * the owner). The table stores the connection's id; a config body names the connection instead
 * (`database_connection: <name>`, in place of the API's `database_connection_id`), so a file is
 * portable between installations: `list` answers the name, `write` looks the id up inside the
 * apply's transaction (a connection the same apply creates is found). The connection must be a
 * PostgreSQL one the principal may use, as through the API. The table is inspected (operations
 * the table cannot tell apart refused, omitted operations filled) when the connection is already
 * saved: that reads the external database, outside the transaction; a connection the same apply
 * creates is inspected by the first poll, which records what it finds as the trigger's error.
 */
const { database_connection_id: _id, ...createFields } = DbTriggerCreateBody.properties
export const DbTriggerConfigBody = T.Object(
  { ...createFields, database_connection: Name },
  { additionalProperties: false, title: 'DbTriggerConfig' },
)

const text = (v: unknown, fallback: string): string => (typeof v === 'string' ? v : fallback)
const int = (v: unknown, fallback: number): number => (typeof v === 'number' ? v : fallback)

/** A config body with the API's defaults filled (`operations` only when given: the table decides the default). */
interface ConfigFields extends Omit<DbTriggerFields, 'database_connection_id' | 'operations'> {
  name: string
  database_connection: string
  operations?: string[]
}

function normalized(body: Readonly<Record<string, unknown>>): ConfigFields {
  const ops = body['operations']
  return {
    name: text(body['name'], ''),
    database_connection: text(body['database_connection'], ''),
    schema_name: text(body['schema_name'], 'public'),
    table_name: text(body['table_name'], ''),
    ...(Array.isArray(ops) ? { operations: ops.map(String) } : {}),
    created_column: typeof body['created_column'] === 'string' ? body['created_column'] : null,
    function_namespace: text(body['function_namespace'], 'default'),
    function_name: text(body['function_name'], ''),
    poll_column: text(body['poll_column'], ''),
    poll_interval_seconds: int(body['poll_interval_seconds'], 10),
    batch_size: int(body['batch_size'], 100),
    description: text(body['description'], ''),
    is_active: typeof body['is_active'] === 'boolean' ? body['is_active'] : true,
  }
}

const checksumOf = (body: Readonly<Record<string, unknown>>): string => bodyChecksum({ ...normalized(body) })

function fieldsFrom(body: Readonly<Record<string, unknown>>, connectionId: string): DbTriggerFields {
  const { name: _n, database_connection: _c, operations, ...rest } = normalized(body)
  return { ...rest, database_connection_id: connectionId, operations: operations ?? [] }
}

const currentOf = (r: ManagedDbTriggerRow): ConfigCurrent => {
  const { database_connection_id: _cid, ...f } = fieldsOf(r)
  const body = { name: r.name, database_connection: r.database_connection ?? '', ...f }
  return { key: r.name, body, managedBy: r.managed_by, checksum: r.checksum ?? checksumOf(body) }
}

/** The connection a body names, seen from `q` (the apply's transaction): PostgreSQL, usable by `p`. */
async function connectionOf(q: ConfigTx | ServiceContext['db'], p: Principal, name: string): Promise<string> {
  const c = await dbTriggerStore(q).connectionByName(name)
  if (c === null) throw AppError.of('database.connection_not_found', `database connection ${name} does not exist`)
  const permission = `platform.database-connections/${name}.use:all`
  if (!can(p, permission))
    throw AppError.of(
      'db_trigger.connection_forbidden',
      `the trigger's owner may not use database connection ${name} (${permission})`,
    )
  if (c.connection_type !== 'postgresql')
    throw AppError.of(
      'db_trigger.unsupported_connection',
      `database triggers poll PostgreSQL connections; ${name} is ${String(c.connection_type)}`,
    )
  return c.id
}

export function dbTriggerConfigKind(ctx: ServiceContext): ConfigKind {
  const log = ctx.log.child({ mod: 'db-triggers' })
  let pools: ConnectionPools | undefined
  const poolsOf = () =>
    (pools ??= connectionPools({
      db: ctx.db,
      resources: ctx.resources,
      config: ctx.config,
      log: ctx.log.child({ mod: 'data' }),
    }))

  /** Inspects the table when the connection is saved (committed); fills omitted operations; refuses undetectable ones. */
  const inspect = async (f: DbTriggerFields, operationsGiven: boolean): Promise<void> => {
    const connection = await ctx.resources.byId(databaseConnectionKind, f.database_connection_id)
    let facts: TableFacts | null = null
    if (connection !== null) {
      const target = { schema: f.schema_name, table: f.table_name, column: f.poll_column, created: f.created_column }
      facts = await inspectAtSave(poolsOf(), connection, target, ctx.config.DB_TRIGGER_STATEMENT_TIMEOUT_MS, log)
    }
    if (!operationsGiven) f.operations = defaultOperations(f.created_column, facts)
    if (facts !== null) operationPlan(f.operations, f.created_column, facts)
  }

  return {
    kind: 'database_trigger',
    section: 'databaseTriggers',
    packageable: true,
    secretFields: [],
    keyOf: (body) => text(body['name'], ''),
    refs: (body) => {
      const n = normalized(body)
      return [
        { kind: 'function', key: `${n.function_namespace}/${n.function_name}` },
        { kind: 'database_connection', key: n.database_connection },
      ]
    },
    checksum: checksumOf,
    async validate(p, body) {
      const issues = bodyIssues(DbTriggerConfigBody, body)
      if (issues.length > 0) return issues
      // a connection not saved yet (created by the same document) is a reference, checked by the apply
      const name = text(body['database_connection'], '')
      const saved = await dbTriggerStore(ctx.db).connectionByName(name)
      if (saved === null) return []
      return issuesOf(async () => {
        const f = fieldsFrom(body, await connectionOf(ctx.db, p, name))
        await inspect(f, Array.isArray(body['operations']))
      })
    },
    list: async (db) => (await dbTriggerStore(db).allForConfig()).map(currentOf),
    async write(tx, p, body, { managedBy }): Promise<AfterCommit[]> {
      const name = text(body['name'], '')
      const issues = bodyIssues(DbTriggerConfigBody, body)
      if (issues.length > 0) throw invalid(`invalid database trigger ${name}`, issues)
      const f = fieldsFrom(body, await connectionOf(tx, p, text(body['database_connection'], '')))
      await inspect(f, Array.isArray(body['operations']))
      const store = dbTriggerStore(tx)
      const managed = { by: managedBy, checksum: checksumOf(body) }
      const row = await store.byConfigName(name)
      const next =
        row === null
          ? await store.create(p.userId, name, f, managed)
          : await store.update(row.id, f, movesBookmark(fieldsOf(row), f), managed)
      if (next === null)
        throw row === null
          ? conflict(`a database trigger named ${name} exists`, 'db_trigger.exists')
          : notFound(`database trigger ${name} not found`, 'db_trigger.not_found')
      return [() => announce(ctx, next)]
    },
    async remove(tx, _p, key): Promise<AfterCommit[]> {
      const store = dbTriggerStore(tx)
      const row = await store.byConfigName(key)
      if (row === null) return []
      await store.delete(row.id)
      return [() => announceRemoved(ctx, row)]
    },
  }
}
