import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import {
  BackendTerminatedError,
  BackendTerminatedUnexpectedlyError,
  ConnectionError,
  createPool,
  createTypeParserPreset,
  sql,
  type CommonQueryMethods,
  type DatabasePool,
} from 'slonik'
import { AppError } from '../kernel/errors.ts'
import type { Logger } from '../kernel/log.ts'

export { sql }
export type Db = DatabasePool

/*
 * Postgres through slonik: every value is a bound parameter (the `sql` tag), never concatenated.
 * Timestamps come back as ISO 8601 strings (what the API returns) and int8 as numbers.
 *
 * Slonik sends each statement unnamed, so Postgres parses and plans it on every call. For a
 * statement on a hot path whose planning costs more than its run (a chat turn's write, a cold
 * turn's read, the execution mirror's upsert), the statement lives in a PL/pgSQL function
 * (migrations 0020-0022): PL/pgSQL keeps its statements' plans for the session, and the call
 * itself is cheap to plan. A turn's write went from 1,850-1,970 to 2,920-3,100 statements/s in
 * pgbench; the chat bench's nats-server + Postgres CPU per turn fell by about a fifth.
 */
export async function createDb(url: string, options: { maximumPoolSize?: number } = {}): Promise<Db> {
  const parsers = createTypeParserPreset().filter((p) => !['timestamp', 'timestamptz', 'int8'].includes(p.name))
  return createPool(url, {
    maximumPoolSize: options.maximumPoolSize ?? 20,
    // slonik's default sends DISCARD ALL after every pooled query: a second round trip per query
    // (measured: half of a chat turn's Postgres round trips). Nothing here leaves session state on
    // a pooled connection (SET LOCAL and advisory xact locks end with their transaction; the data
    // drivers use clients of their own), so there is nothing to discard. DISCARD ALL would also
    // drop the plans the PL/pgSQL functions above keep per session.
    resetConnection: async () => undefined,
    typeParsers: [
      ...parsers,
      { name: 'timestamptz', parse: (v) => new Date(v).toISOString() },
      { name: 'timestamp', parse: (v) => new Date(`${v}Z`).toISOString() },
      { name: 'int8', parse: (v) => Number(v) },
    ],
  })
}

/** SQLSTATE class 40: serialization failure, deadlock — the transaction may succeed when run again. */
const ROLLBACK_CLASS = /^40/
/** Attempts of one transaction whose work Postgres rolled back for a retryable reason (slonik's default too). */
const TRANSACTION_ATTEMPTS = 5

/**
 * Runs `work` in one transaction on one pooled connection: BEGIN, the work, COMMIT (ROLLBACK when
 * it throws), run again when Postgres rolled it back for a retryable reason (class 40).
 *
 * Not slonik's `pool.transaction`: that one runs inside an AsyncLocalStorage, and on Node 20 the
 * first `run` installs promise hooks for the rest of the process's life. Measured on the resource
 * read: the hooks cost ~8 % of the platform process's CPU, on every promise of every request —
 * for a check (a query on a foreign connection inside a transaction) the code here never needs.
 */
export async function transaction<R>(db: Db, work: (tx: CommonQueryMethods) => Promise<R>): Promise<R> {
  return db.connect(async (conn) => {
    for (let attempt = 1; ; attempt++) {
      await conn.query(sql.unsafe`begin`)
      try {
        const result = await work(conn)
        await conn.query(sql.unsafe`commit`)
        return result
      } catch (err) {
        await conn.query(sql.unsafe`rollback`).catch(() => undefined)
        const code = (err as { code?: unknown }).code
        if (attempt < TRANSACTION_ATTEMPTS && typeof code === 'string' && ROLLBACK_CLASS.test(code)) continue
        throw err
      }
    }
  })
}

/** Postgres error classes that mean "the server is unreachable or going away" (SQLSTATE 08xxx, 57P01–57P03). */
const UNAVAILABLE_SQLSTATE = /^(08|57P0[123])/
const UNAVAILABLE_ERRNO = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EPIPE', 'ETIMEDOUT'])

/**
 * Whether an error means the database cannot be reached right now (an outage, a restart), as
 * opposed to a bad query: callers answer 503 for these, not 500. Walks the `cause` chain, since
 * slonik wraps the driver's error.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    // An AppError is an answer its thrower already chose (a connector's host that did not resolve
    // carries the resolver's ENOTFOUND as its cause): it is never the platform's database.
    if (e instanceof AppError) return false
    if (
      e instanceof ConnectionError ||
      e instanceof BackendTerminatedError ||
      e instanceof BackendTerminatedUnexpectedlyError
    )
      return true
    const code = (e as { code?: unknown }).code
    if (typeof code === 'string' && (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_ERRNO.has(code))) return true
    if (/Connection terminated|connection refused|the database system is (starting up|shutting down)/i.test(e.message))
      return true
  }
  return false
}

const MIGRATIONS_DIR = join(import.meta.dirname, 'migrations')

/**
 * Applies `migrations/NNNN-*.sql` in order, each in its own transaction, under an advisory lock so
 * several processes starting together migrate once. Migration files hold several statements, which
 * the plain pg protocol runs as one simple query (slonik binds exactly one statement).
 */
export async function migrate(url: string, log: Logger): Promise<string[]> {
  const files = readdirSync(MIGRATIONS_DIR)
    .filter((f) => f.endsWith('.sql'))
    .sort()
  const applied: string[] = []
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query('select pg_advisory_lock(7351001)')
    await client.query(
      'create table if not exists schema_migrations (name text primary key, applied_at timestamptz not null default now())',
    )
    const done = new Set(
      (await client.query<{ name: string }>('select name from schema_migrations')).rows.map((r) => r.name),
    )
    for (const file of files) {
      if (done.has(file)) continue
      await client.query('begin')
      try {
        await client.query(readFileSync(join(MIGRATIONS_DIR, file), 'utf8'))
        await client.query('insert into schema_migrations (name) values ($1)', [file])
        await client.query('commit')
      } catch (err) {
        await client.query('rollback')
        throw new Error(`migration ${file} failed: ${String(err)}`, { cause: err })
      }
      applied.push(file)
      log.info({ migration: file }, 'migration applied')
    }
  } finally {
    await client.end()
  }
  return applied
}
