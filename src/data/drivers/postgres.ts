import pg from 'pg'
import Cursor from 'pg-cursor'
import { AppError } from '../../kernel/errors.ts'
import type { Logger } from '../../kernel/log.ts'
import type { ConnectionSettings, DataPool, PoolTiming, Statement, StatementResult } from './types.ts'

/*
 * PostgreSQL through node-postgres, one `pg.Pool` per connection (min/max from the connection's
 * config). Every statement runs in its own transaction on one pooled client:
 *
 *   read:  BEGIN READ ONLY; SET LOCAL statement_timeout; the SQL through a cursor (pg-cursor: the
 *          extended protocol's Execute with a row limit) reading max_rows + 1 rows; ROLLBACK.
 *          The server produces only the rows asked for and stops (the portal stays suspended),
 *          so a read of a huge table costs max_rows + 1 rows, not the table. A write of any kind
 *          (DML, DDL, a function that writes) is refused by Postgres itself: SQLSTATE 25006.
 *          The SQL is the text checked by ../pg-sql-check.ts (one SELECT), wrapped as
 *          `select * from (<sql>) as platform_read limit max_rows + 1`: the planner then plans for
 *          that many rows (fast-start plans, a bounded top-N sort instead of a full one). An ORDER BY
 *          of the query is kept: Postgres does not flatten a subquery that has one, so its Sort runs
 *          below the Limit.
 *   write: BEGIN; SET LOCAL statement_timeout; the SQL; COMMIT. RETURNING rows come back (at most
 *          max_rows of them), the affected row count always.
 *
 * Before a client goes back to the pool its session is reset (RESET_SESSION: session-level
 * advisory locks, settings, temporary tables, prepared statements, LISTENs), in the same round trip
 * as the ROLLBACK or COMMIT: DISCARD ALL would do it but refuses to run in the implicit transaction
 * of a multi-statement query, so its documented parts are sent one by one.
 *
 * Values are bound (`$1`, `$2`, …); the SQL text holds only the query author's text.
 */
const TYPES = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    // int8 as a number when it fits (counts, ids); timestamps as ISO strings (what JSON carries)
    if (oid === 20) return (v: string) => (Number.isSafeInteger(Number(v)) ? Number(v) : v)
    if (oid === 1184) return (v: string) => new Date(v).toISOString()
    if (oid === 1114) return (v: string) => new Date(`${v.replace(' ', 'T')}Z`).toISOString()
    return pg.types.getTypeParser(oid, format ?? 'text')
  }) as typeof pg.types.getTypeParser,
}

// The predefined roles exist from Postgres 11 on: CASE keeps pg_has_role from an unknown name.
const member = (role: string) =>
  `case when exists (select 1 from pg_roles where rolname = '${role}') then pg_has_role(current_user, '${role}', 'MEMBER') else false end`
const PRIVILEGES = `select rolsuper as su, current_user as who, ${member('pg_read_server_files')} as rf, ${member('pg_write_server_files')} as wf, ${member('pg_execute_server_program')} as xp from pg_roles where rolname = current_user`

/** DISCARD ALL's parts, each allowed inside the implicit transaction of a multi-statement query. */
export const RESET_SESSION =
  'close all; set session authorization default; reset all; deallocate all; unlisten *; select pg_advisory_unlock_all(); discard plans; discard temp; discard sequences'

const UNREACHABLE = /^(08|28|3D)/ // connection exceptions, invalid authorization, invalid catalog (no such database)
const NET_ERRNO = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EHOSTUNREACH', 'ETIMEDOUT', 'EAI_AGAIN'])

/** A driver error as the platform's error: timeouts, read-only refusals and unreachable servers apart from bad SQL. */
export function pgError(err: unknown): AppError {
  if (err instanceof AppError) return err
  const e = err as { code?: unknown; message?: unknown }
  const code = typeof e.code === 'string' ? e.code : ''
  const message = typeof e.message === 'string' ? e.message : String(err)
  if (code === '57014') return AppError.of('query.timeout', `the statement ran longer than its timeout (${message})`)
  if (code === '25006') return AppError.of('query.read_only', `refused by the database: ${message}`)
  // resolved before connecting (platform-database.ts); a name that stops resolving meanwhile lands here
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return AppError.of('upstream.dns_failed', `the database host did not resolve: ${message}`)
  if (UNREACHABLE.test(code) || NET_ERRNO.has(code) || /timeout expired|Connection terminated|connect/i.test(message)) {
    return AppError.of('database.unreachable', `could not reach the database: ${message}`)
  }
  return AppError.of(
    'query.failed',
    `the database refused the statement: ${message}${code === '' ? '' : ` (SQLSTATE ${code})`}`,
  )
}

export function renderPg(st: Pick<Statement, 'pieces' | 'params'>): { text: string; values: unknown[] } {
  const numbers = new Map<string, number>()
  const values: unknown[] = []
  let text = ''
  for (const p of st.pieces) {
    if ('text' in p) {
      text += p.text
      continue
    }
    let n = numbers.get(p.param)
    if (n === undefined) {
      values.push(pgValue(st.params[p.param]))
      n = values.length
      numbers.set(p.param, n)
    }
    text += `$${String(n)}`
  }
  return { text, values }
}

// Objects travel as JSON text (a json/jsonb parameter); arrays stay arrays (Postgres arrays).
const pgValue = (v: unknown): unknown =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? JSON.stringify(v) : v

export function postgresPool(s: ConnectionSettings, timing: PoolTiming, log: Logger): DataPool {
  const ssl =
    s.sslMode === null || s.sslMode === 'disable' || s.sslMode === 'prefer'
      ? false
      : { rejectUnauthorized: s.sslMode === 'verify-ca' || s.sslMode === 'verify-full' }
  const pool = new pg.Pool({
    host: s.host,
    port: s.port,
    database: s.database === '' ? undefined : s.database,
    user: s.username === '' ? undefined : s.username,
    password: s.password ?? undefined,
    ssl,
    min: s.minPool,
    max: s.maxPool,
    idleTimeoutMillis: timing.idleMs,
    connectionTimeoutMillis: timing.connectTimeoutMs,
    application_name: 'agent-platform',
    types: TYPES,
  })
  // An idle client losing its server must not crash the process; the pool replaces it.
  pool.on('error', (err) => log.warn({ err: err.message }, 'idle database connection failed'))

  // pg-pool listens for errors only on idle clients: a checked-out client whose server goes away
  // between two queries (a restart, a dropped database) emits 'error' with nobody listening, which
  // would end the process. Each client gets one listener of its own; the failing query still rejects.
  const guarded = new WeakSet<pg.PoolClient>()
  const connect = async () => {
    try {
      const client = await pool.connect()
      if (!guarded.has(client)) {
        guarded.add(client)
        client.on('error', (err) => log.warn({ err: err.message }, 'database connection failed while in use'))
      }
      return client
    } catch (err) {
      throw pgError(err)
    }
  }

  return {
    type: 'postgresql',
    async run(st): Promise<StatementResult> {
      const client = await connect()
      let broken: Error | undefined
      try {
        // one round trip for both (simple protocol, no user text): the timeout is an integer of the
        // platform's, validated and clamped
        await client.query(
          `${st.readOnly ? 'begin transaction read only' : 'begin'}; set local statement_timeout = ${String(Math.max(1, Math.floor(st.timeoutMs)))}`,
        )
        const rendered = renderPg(st)
        const values = rendered.values
        const text = st.checkedText ?? rendered.text
        let result: StatementResult
        if (st.readOnly) {
          // a newline before the closing parenthesis: the query may end in a -- comment
          const capped =
            st.checkedText === undefined
              ? text
              : `select * from (\n${text}\n) as platform_read limit ${String(st.maxRows + 1)}`
          const cursor = client.query(new Cursor<Record<string, unknown>>(capped, values, { types: TYPES }))
          const rows = await cursor.read(st.maxRows + 1)
          await cursor.close()
          result = { rows: rows.slice(0, st.maxRows), truncated: rows.length > st.maxRows, affectedRows: null }
          await client.query(`rollback; ${RESET_SESSION}`)
        } else {
          // the extended protocol even without values: one statement, never a script
          // (`queryMode` is pg's, missing from its type declarations)
          const config: pg.QueryConfig & { queryMode: 'extended' } = {
            text,
            values,
            types: TYPES,
            queryMode: 'extended',
          }
          const r = await client.query<Record<string, unknown>>(config)
          await client.query(`commit; ${RESET_SESSION}`)
          result = {
            rows: (r.rows ?? []).slice(0, st.maxRows),
            truncated: (r.rows ?? []).length > st.maxRows,
            affectedRows: r.rowCount ?? null,
          }
        }
        return result
      } catch (err) {
        await client.query(`rollback; ${RESET_SESSION}`).catch((e: unknown) => {
          broken = e instanceof Error ? e : new Error(String(e))
        })
        throw pgError(err)
      } finally {
        client.release(broken)
      }
    },
    async serverVersion() {
      const client = await connect()
      try {
        const r = await client.query<{ v: string }>("select current_setting('server_version') as v")
        return `PostgreSQL ${String(r.rows[0]?.v)}`
      } catch (err) {
        throw pgError(err)
      } finally {
        client.release()
      }
    },
    async privilegeWarnings() {
      const client = await connect()
      try {
        const r = await client.query<{ su: boolean; rf: boolean; wf: boolean; xp: boolean; who: string }>(PRIVILEGES)
        const row = r.rows[0]
        if (row === undefined) return []
        const out: string[] = []
        if (row.su)
          out.push(
            `the role ${row.who} is a superuser: queries on this connection run as the database's administrator (use a role with only the grants its queries need)`,
          )
        if (!row.su && row.rf) out.push(`the role ${row.who} may read the server's files (pg_read_server_files)`)
        if (!row.su && row.wf) out.push(`the role ${row.who} may write the server's files (pg_write_server_files)`)
        if (!row.su && row.xp)
          out.push(`the role ${row.who} may run programs on the server (pg_execute_server_program)`)
        return out
      } catch (err) {
        throw pgError(err)
      } finally {
        client.release()
      }
    },
    close: () => pool.end(),
  }
}
