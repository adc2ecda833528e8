import pg from 'pg'
import { readServices } from '../setup/services.ts'
import { adminQuery, dropDatabase } from './pg-admin.ts'

/*
 * A second database on the test run's Postgres cluster, standing for an external database that
 * database connections and queries reach (tests/setup starts one cluster; this adds a database to
 * it, dropped in teardown). `spec` is what a `postgresql` connection needs to reach it.
 */
interface Teardown {
  teardown(fn: () => unknown): void
}

export interface ExternalPg {
  database: string
  url: string
  spec: {
    connection_type: 'postgresql'
    host: string
    port: number
    database: string
    username: string
    password: string | null
  }
  sql<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]>
}

let counter = 0

export async function externalPostgres(t: Teardown, label = 'ext'): Promise<ExternalPg> {
  const { pgBase } = readServices()
  const database = `${label}_${String(process.pid)}_${String(++counter)}`
  await adminQuery(pgBase, `create database ${database}`)
  const url = `${pgBase}/${database}`
  const pool = new pg.Pool({ connectionString: url, max: 2 })
  t.teardown(async () => {
    await pool.end()
    await dropDatabase(pgBase, database)
  })
  const u = new URL(url)
  return {
    database,
    url,
    spec: {
      connection_type: 'postgresql',
      host: u.hostname,
      port: Number(u.port || 5432),
      database,
      username: decodeURIComponent(u.username || 'postgres'),
      password: u.password === '' ? null : decodeURIComponent(u.password),
    },
    sql: async <R extends pg.QueryResultRow>(text: string, values: unknown[] = []) =>
      (await pool.query<R>(text, values)).rows,
  }
}
