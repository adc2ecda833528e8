import type { Static } from '@sinclair/typebox'
import type { DatabaseConnectionSpec } from '../../schemas/database-connection.ts'
import type { QuerySpec } from '../../schemas/query.ts'
import type { FieldIssue } from '../kernel/errors.ts'
import { AppError } from '../kernel/errors.ts'
import type { ConnectionType } from './drivers/types.ts'
import { checkPostgresSql } from './pg-sql-check.ts'
import { assertNotPlatformDatabase, type PlatformDatabase } from './platform-database.ts'
import { placeholderIssues, splitPlaceholders } from './placeholders.ts'

/*
 * The checks the two kinds run when a resource is saved (their `validate`), which need what only a
 * running platform knows: a query's SQL is checked as Postgres only when its connection is a
 * Postgres one (ClickHouse and Snowflake speak other dialects), and a connection is compared with
 * the platform's own database. The data feature provides both (`provideSaveChecks`) in the roles
 * that save resources; without it (a process that only describes kinds) the checks pass, and the
 * run-time checks (execute.ts, pools.ts) still hold.
 */
export interface SaveCheckDeps {
  connectionTypeOf(id: string): Promise<ConnectionType | null>
  platformDatabase: PlatformDatabase | undefined
  defaultPort(type: ConnectionType): number
}

let deps: SaveCheckDeps | undefined

export function provideSaveChecks(d: SaveCheckDeps): void {
  deps = d
}

/** The platform's own database, as the data feature was told (undefined before it started). */
export const platformDatabase = (): PlatformDatabase | undefined => deps?.platformDatabase

/** A query's SQL: placeholders, and for a Postgres connection the parser's checks of its operation. */
export async function querySqlIssues(s: Static<typeof QuerySpec>): Promise<FieldIssue[]> {
  const placeholders = placeholderIssues(s.sql)
  if (placeholders.length > 0 || deps === undefined) return placeholders
  const type = await deps.connectionTypeOf(s.database_connection_id)
  if (type !== 'postgresql') return []
  const checked = await checkPostgresSql(s.sql, splitPlaceholders(s.sql), s.operation)
  return checked.ok ? [] : [{ path: 'sql', message: checked.message }]
}

/** A connection that leads to the platform's own database without `allow_platform_database`. */
export async function connectionIssues(s: Static<typeof DatabaseConnectionSpec>): Promise<FieldIssue[]> {
  if (deps === undefined || s.connection_type !== 'postgresql') return []
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
