import type { Static } from '@sinclair/typebox'
import type { CONNECTION_TYPES, DatabaseConnectionSpec } from '../../../schemas/database-connection.ts'
import type { Piece } from '../placeholders.ts'

/*
 * What every database driver implements. A driver turns `:name` pieces into its own bound-parameter
 * form (Postgres `$n`, ClickHouse an external-data table, Snowflake `?` bindings) and enforces the
 * read rules with the database's own means: a read-only transaction or setting, a statement
 * timeout, and a row cap the server stops at.
 */
export type ConnectionType = (typeof CONNECTION_TYPES)[number]
type Spec = Static<typeof DatabaseConnectionSpec>

/** A connection's settings in clear (the password decrypted), as a driver needs them. */
export interface ConnectionSettings {
  type: ConnectionType
  host: string
  /** The type's default already applied. */
  port: number
  database: string
  username: string
  password: string | null
  sslMode: Spec['ssl_mode']
  config: Spec['config']
  minPool: number
  maxPool: number
}

export interface Statement {
  pieces: readonly Piece[]
  /** Values by placeholder name (every placeholder has one). */
  params: Readonly<Record<string, unknown>>
  readOnly: boolean
  /**
   * Postgres only: the statement as ../pg-sql-check.ts checked (and for a read, rewrote) it, with
   * `$n` for the placeholders in first-use order; the driver runs it instead of rendering pieces.
   */
  checkedText?: string
  timeoutMs: number
  /** Rows returned at most; a read asks the database for `maxRows + 1` to know whether there were more. */
  maxRows: number
}

export interface StatementResult {
  rows: Record<string, unknown>[]
  truncated: boolean
  affectedRows: number | null
}

/** One pool per connection and process (see ../pools.ts). */
export interface DataPool {
  readonly type: ConnectionType
  run(statement: Statement): Promise<StatementResult>
  /** Connects (or reuses a connection) and answers the server's version. */
  serverVersion(timeoutMs: number): Promise<string>
  /**
   * Postgres: what the connected role holds beyond a query's business (superuser, the server-file
   * and server-program roles), as warnings for the connection test.
   */
  privilegeWarnings?(): Promise<string[]>
  /** Closes idle connections now and the others when they are released. */
  close(): Promise<void>
}

export interface PoolTiming {
  connectTimeoutMs: number
  idleMs: number
}

export const DEFAULT_PORTS: Record<ConnectionType, number> = { postgresql: 5432, clickhouse: 8123, snowflake: 443 }
