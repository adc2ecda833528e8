import type { Static } from '@sinclair/typebox'
import type { QueryExecuteResult, QuerySpec } from '../../schemas/query.ts'
import { permissionSet } from '../feature/permissions.ts'
import { can, loadUserRow, type Principal } from '../auth/principal.ts'
import { hasPermission } from '../auth/permissions.ts'
import { validateAgainst } from '../kernel/json-schema.ts'
import type { Config } from '../kernel/config.ts'
import { AppError, notFound } from '../kernel/errors.ts'
import type { Logger } from '../kernel/log.ts'
import { databaseConnectionKind } from '../kinds/database-connection/kind.ts'
import { queryKind } from '../kinds/query/kind.ts'
import type { Db } from '../platform/db.ts'
import { canOnResource } from '../resources/permissions.ts'
import type { ResourceRecord, ResourceService } from '../resources/service.ts'
import { checkPostgresSql, type PgSqlCheck } from './pg-sql-check.ts'
import { placeholderNames, splitPlaceholders, type Piece } from './placeholders.ts'
import type { ConnectionPools } from './pools.ts'

/** The permissions this module checks, for the reference (its feature contributes the list). */
export const queryPermissions = permissionSet()

/*
 * Running a saved query, the one path for the execute endpoints and the agent tool:
 *  1. the caller may execute it (`platform.queries/<ns>/<name>.execute`, own or all; 404 otherwise);
 *  2. its owner may use its connection (`platform.database-connections/<name>.use:all`; admins hold
 *     it): connections are admin-only, so a query written by someone else reaches a database only
 *     when an administrator granted that user the connection;
 *  3. the input matches input_schema; `:user_id` / `:user_email` are always the caller's, whatever
 *     the input says;
 *  4. on Postgres, the SQL passes the parser's checks of its operation (pg-sql-check.ts);
 *  5. the driver binds every value and enforces read-only, the timeout and the row cap;
 *  6. the rows match output_schema (a schema of one row, or of the whole array when its type is
 *     `array`).
 */
queryPermissions.add('platform.queries/{namespace}/{name}.execute:own', 'Query: execute (own queries)')
queryPermissions.add('platform.queries/{namespace}/{name}.execute:all', 'Query: execute (any query)')
queryPermissions.add(
  'platform.database-connections/{name}.use:all',
  'Database connection: may be the connection of queries this user owns (admins hold it through platform.*:all)',
)

export type QueryRecord = ResourceRecord<Static<typeof QuerySpec>> & { namespace: string }
export type QueryResult = Static<typeof QueryExecuteResult>

export interface QueryRunDeps {
  db: Db
  config: Config
  resources: ResourceService
  pools: ConnectionPools
  log: Logger
}

/**
 * The query if the caller may execute it (`execute`, own or all: running a query is not reading its
 * SQL, so `read` is not required); 404 for a query that does not exist and for one the caller may
 * not run alike, so nothing leaks about queries the caller may not use.
 */
export async function executableQuery(
  d: { resources: Pick<ResourceService, 'loadMany'> },
  p: Principal,
  namespace: string,
  name: string,
): Promise<QueryRecord> {
  // the platform's own read (no `read` check): the execute permission below is the check
  const [q] =
    namespace === '' || name === '' || name.includes('/')
      ? []
      : await d.resources.loadMany(queryKind, [`${namespace}/${name}`])
  if (q === undefined || !canOnResource(p, queryKind, 'execute', { namespace, name, ownerId: q.owner_id ?? null }))
    throw notFound(`query ${namespace}/${name} not found`)
  return q as QueryRecord
}

/** Whether the query's owner may use the connection (checked on the owner's live roles). */
async function assertOwnerMayUse(d: QueryRunDeps, p: Principal, q: QueryRecord, connectionName: string): Promise<void> {
  const permission = `platform.database-connections/${connectionName}.use:all`
  // the caller running their own query: its live permissions (never wider than the owner's) suffice
  if (q.owner_id === p.userId && can(p, permission)) return
  const owner = q.owner_id === null || q.owner_id === undefined ? null : await loadUserRow(d.db, q.owner_id)
  if (owner === null || !owner.active || !hasPermission(owner.permissions, permission)) {
    throw AppError.of(
      'query.connection_forbidden',
      `the owner of query ${q.namespace}/${q.name} may not use database connection ${connectionName} (${permission})`,
    )
  }
}

/**
 * What a query's text and schema give every run, worked out on its first run: the placeholders, the
 * input properties it declares, and on Postgres the parser's verdict. Kept per record: a record is
 * frozen (src/resources/row.ts) and a changed query is a new one, so nothing here outlives the
 * text it was made from.
 */
interface Prepared {
  pieces: Piece[]
  names: readonly string[]
  declared: Readonly<Record<string, unknown>>
  /** The parser's check as an operation of this query (the connection's type is read per run). */
  pgCheck: Promise<PgSqlCheck> | undefined
}

const preparedQueries = new WeakMap<QueryRecord, Prepared>()

function prepared(q: QueryRecord): Prepared {
  let found = preparedQueries.get(q)
  if (found === undefined) {
    const pieces = splitPlaceholders(q.sql)
    found = {
      pieces,
      names: placeholderNames(pieces),
      declared: (q.input_schema['properties'] ?? {}) as Record<string, unknown>,
      pgCheck: undefined,
    }
    preparedQueries.set(q, found)
  }
  return found
}

/** The query's SQL through the parser's checks (remembered with the query; a failed check is asked again next run). */
function pgChecked(q: QueryRecord, prep: Prepared): Promise<PgSqlCheck> {
  if (prep.pgCheck === undefined) {
    const check = checkPostgresSql(q.sql, prep.pieces, q.operation)
    prep.pgCheck = check
    check.catch(() => {
      if (prep.pgCheck === check) prep.pgCheck = undefined
    })
  }
  return prep.pgCheck
}

/**
 * The value of each placeholder: the input's, null for an optional parameter left out, the
 * caller's identity for `:user_id` / `:user_email` whatever the input says. Only the placeholders'
 * values: the drivers bind nothing else.
 */
function bindValues(prep: Prepared, input: Record<string, unknown>, p: Principal): Record<string, unknown> {
  const values: Record<string, unknown> = {}
  let missing: string[] | undefined
  for (const n of prep.names) {
    if (n === 'user_id') values[n] = p.userId
    else if (n === 'user_email') values[n] = p.email
    else if (Object.hasOwn(input, n)) values[n] = input[n]
    else if (Object.hasOwn(prep.declared, n)) values[n] = null
    else (missing ??= []).push(n)
  }
  if (missing !== undefined) {
    throw AppError.of('query.missing_parameter', `no value for :${missing.join(', :')}`, {
      issues: missing.map((m) => ({ path: `/input/${m}`, message: 'required by the SQL' })),
    })
  }
  return values
}

export async function runQuery(
  d: QueryRunDeps,
  p: Principal,
  q: QueryRecord,
  input: Record<string, unknown>,
): Promise<QueryResult> {
  if (q.is_active === false) throw AppError.of('query.inactive', `query ${q.namespace}/${q.name} is not active`)
  const inputIssues = validateAgainst(q.input_schema, input, '/input')
  if (inputIssues.length > 0)
    throw AppError.of('query.invalid_input', "input does not match the query's input_schema", { issues: inputIssues })
  const connection = await d.resources.byId(databaseConnectionKind, q.database_connection_id)
  if (connection === null)
    throw AppError.of(
      'database.connection_not_found',
      `the database connection of query ${q.namespace}/${q.name} does not exist`,
    )
  await assertOwnerMayUse(d, p, q, connection.name)
  const prep = prepared(q)
  const { pieces } = prep
  const params = bindValues(prep, input, p)
  const readOnly = q.operation === 'read'
  // checked again before every run (remembered with the query): a query saved before the check
  // existed, or whose connection became a Postgres one, is refused here
  let checkedText: string | undefined
  if (connection.connection_type === 'postgresql') {
    const checked = await pgChecked(q, prep)
    if (!checked.ok) throw AppError.of('query.sql_refused', `query ${q.namespace}/${q.name}: ${checked.message}`)
    checkedText = checked.text
  }
  const started = performance.now()
  const timeoutMs = Math.min(q.timeout_ms, d.config.QUERY_TIMEOUT_MS_MAX)
  const maxRows = Math.min(q.max_rows, d.config.QUERY_MAX_ROWS_MAX)
  const out = await d.pools.withConnection(
    connection.id,
    (pool) =>
      pool.run({ pieces, params, readOnly, timeoutMs, maxRows, ...(checkedText === undefined ? {} : { checkedText }) }),
    connection,
  )
  const duration = Math.round((performance.now() - started) * 100) / 100
  const schema = q.output_schema
  if (Object.keys(schema).length > 0) {
    const issues =
      schema['type'] === 'array'
        ? validateAgainst(schema, out.rows, '/rows')
        : out.rows.flatMap((row, i) => validateAgainst(schema, row, `/rows/${String(i)}`))
    if (issues.length > 0)
      throw AppError.of('query.output_invalid', "the rows do not match the query's output_schema", {
        issues: issues.slice(0, 20),
      })
  }
  d.log.debug(
    { query: `${q.namespace}/${q.name}`, by: p.userId, rows: out.rows.length, ms: duration },
    'query executed',
  )
  return {
    operation: q.operation,
    rows: out.rows,
    row_count: out.rows.length,
    ...(readOnly ? {} : { affected_rows: out.affectedRows }),
    truncated: out.truncated,
    duration_ms: duration,
  }
}
