import type { Static } from '@sinclair/typebox'
import type { DatabaseConnectionSpec } from '../../schemas/database-connection.ts'
import type { QuerySpec } from '../../schemas/query.ts'
import type { SpecCheckContext } from '../feature/define.ts'
import type { FieldIssue } from '../kernel/errors.ts'
import { AppError } from '../kernel/errors.ts'
import { databaseConnectionKind } from '../kinds/database-connection/kind.ts'
import { queryKind } from '../kinds/query/kind.ts'
import { findRow } from '../resources/find-row.ts'
import type { SpecCheck } from '../resources/validation.ts'
import { DEFAULT_PORTS, type ConnectionType } from './drivers/types.ts'
import { checkPostgresSql } from './pg-sql-check.ts'
import { assertNotPlatformDatabase, platformDatabaseOf, type PlatformDatabase } from './platform-database.ts'
import { placeholderIssues, splitPlaceholders } from './placeholders.ts'

/*
 * The checks of the two kinds on every save that need what only a running platform knows, as the
 * data feature's spec checks (module.ts `specChecks`): a query's SQL is checked as Postgres only
 * when its connection is a Postgres one (ClickHouse and Snowflake speak other dialects), and a
 * connection is compared with the platform's own database. The run-time checks (execute.ts,
 * pools.ts) hold as well, for rows written around the engine.
 */
export interface SaveCheckDeps {
  connectionTypeOf(id: string): Promise<ConnectionType | null>
  platformDatabase: PlatformDatabase | undefined
  defaultPort(type: ConnectionType): number
}

/** What the checks need, from the roles' context: the connection's row straight from the database (the resource engine is built with these checks). */
export function saveCheckDeps(ctx: SpecCheckContext): SaveCheckDeps {
  return {
    connectionTypeOf: async (id) => {
      const row = await findRow(ctx.db, databaseConnectionKind, { id })
      return row === null ? null : (row.spec['connection_type'] as ConnectionType)
    },
    platformDatabase: platformDatabaseOf(ctx.databaseUrl),
    defaultPort: (type) => DEFAULT_PORTS[type],
  }
}

/** The query's SQL and the connection's address, each on its own kind. */
export function saveChecks(deps: SaveCheckDeps): SpecCheck {
  return async (kind, spec): Promise<FieldIssue[]> => {
    // the spec passed the kind's schema before any check runs
    if (kind.kind === queryKind.kind) return querySqlIssues(deps, spec as Static<typeof QuerySpec>)
    if (kind.kind === databaseConnectionKind.kind)
      return connectionIssues(deps, spec as Static<typeof DatabaseConnectionSpec>)
    return []
  }
}

/** A query's SQL: placeholders, and for a Postgres connection the parser's checks of its operation. */
async function querySqlIssues(deps: SaveCheckDeps, s: Static<typeof QuerySpec>): Promise<FieldIssue[]> {
  const placeholders = placeholderIssues(s.sql)
  if (placeholders.length > 0) return placeholders
  const type = await deps.connectionTypeOf(s.database_connection_id)
  if (type !== 'postgresql') return []
  const checked = await checkPostgresSql(s.sql, splitPlaceholders(s.sql), s.operation)
  return checked.ok ? [] : [{ path: 'sql', message: checked.message }]
}

/** A connection that leads to the platform's own database without `allow_platform_database`. */
async function connectionIssues(deps: SaveCheckDeps, s: Static<typeof DatabaseConnectionSpec>): Promise<FieldIssue[]> {
  if (s.connection_type !== 'postgresql') return []
  const settings = {
    type: s.connection_type,
    host: s.host,
    port: s.port ?? deps.defaultPort(s.connection_type),
    database: s.database,
    username: s.username,
  }
  try {
    await assertNotPlatformDatabase(settings, deps.platformDatabase, s.allow_platform_database === true)
    return []
  } catch (err) {
    // a name that does not resolve now may later (internal DNS): checked again on every use
    if (err instanceof AppError && err.code === 'upstream.dns_failed') return []
    if (err instanceof AppError) return [{ path: 'host', message: err.message }]
    throw err
  }
}
