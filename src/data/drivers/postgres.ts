import type { Duplex } from 'node:stream'
import pg from 'pg'
import { AppError } from '../../kernel/errors.ts'
import type { Logger } from '../../kernel/log.ts'
import type { ConnectionSettings, DataPool, PoolTiming, Statement, StatementResult } from './types.ts'

/*
 * PostgreSQL through node-postgres, one `pg.Pool` per connection (min/max from the connection's
 * config). Every statement runs in its own transaction on one pooled client:
 *
 *   read:  BEGIN READ ONLY; SET LOCAL statement_timeout; the SQL, executed with a row limit of
 *          max_rows + 1 (the extended protocol's Execute: the server produces only the rows asked
 *          for and stops, the portal left suspended until the transaction ends), so a read of a
 *          huge table costs max_rows + 1 rows, not the table; ROLLBACK. A write of any kind (DML,
 *          DDL, a function that writes) is refused by Postgres itself: SQLSTATE 25006.
 *          The SQL is the text checked by ../pg-sql-check.ts (one SELECT), wrapped as
 *          `select * from (<sql>) as platform_read limit max_rows + 1`: the planner then plans for
 *          that many rows (fast-start plans, a bounded top-N sort instead of a full one). An ORDER BY
 *          of the query is kept: Postgres does not flatten a subquery that has one, so its Sort runs
 *          below the Limit. The platform's own reads (db-triggers) come unwrapped; the Execute limit
 *          bounds them the same way.
 *   write: BEGIN; SET LOCAL statement_timeout; the SQL; COMMIT. RETURNING rows come back (at most
 *          max_rows of them), the affected row count always.
 *
 * One round trip and one socket write a statement: the clients are node-postgres's pipeline mode,
 * and the three parts — the simple-query `BEGIN …; SET LOCAL …`, the statement (Parse, Bind,
 * Describe, Execute, Sync) and the simple-query `ROLLBACK|COMMIT; <session reset>` — are written
 * together (the socket corked around them) and answered in order. A failing statement leaves the
 * transaction aborted: the ROLLBACK (or the COMMIT, which then rolls back) that follows ends it
 * all the same, so nothing is decided on the client between the parts. Before this, a read took
 * four round trips (the cursor's fetch and close apart) and about ten writes (bench/FINDINGS.md).
 * The timeout still covers the statement alone: Postgres starts a statement's timer at its first
 * protocol message, after the SET LOCAL ran.
 *
 * Before a client goes back to the pool its session is reset (RESET_SESSION: session-level
 * advisory locks, settings, temporary tables, prepared statements, LISTENs), in the same simple
 * query as the ROLLBACK or COMMIT: DISCARD ALL would do it but refuses to run in the implicit
 * transaction of a multi-statement query, so its documented parts are sent one by one.
 *
 * Values are bound (`$1`, `$2`, …); the SQL text holds only the query author's text.
 */
// `infinity` and years beyond JavaScript's dates stay Postgres's text: a parser never throws (a
// throwing one would fail a write whose COMMIT has already been sent)
const isoOr = (d: Date, text: string): string => (Number.isNaN(d.getTime()) ? text : d.toISOString())

const TYPES = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    // int8 as a number when it fits (counts, ids); timestamps as ISO strings (what JSON carries)
    if (oid === 20) return (v: string) => (Number.isSafeInteger(Number(v)) ? Number(v) : v)
    if (oid === 1184) return (v: string) => isoOr(new Date(v), v)
    if (oid === 1114) return (v: string) => isoOr(new Date(`${v.replace(' ', 'T')}Z`), v)
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

interface LimitedResult {
  rows: Record<string, unknown>[]
  rowCount: number | null
  /** The row limit stopped the statement with rows left. */
  suspended: boolean
}

type Done = (err: Error | undefined, result: pg.ResultBuilder) => void

/*
 * A statement through the extended protocol (even without values: one statement, never a script),
 * executed with a row limit (0: none) and synced at once: Parse, Bind, Describe, Execute(limit),
 * Sync in one write. The server sends at most `limit` rows, then PortalSuspended instead of
 * CommandComplete when there were more; unlike node-postgres's `rows` option (and pg-cursor) no
 * further fetch follows, so it may share a pipelined connection. `_getRows` and
 * `handlePortalSuspended` are node-postgres's Query hooks (pg/lib/query.js), not in its types.
 * The text goes to the constructor as a string: a config object would be copied property by
 * property (node-postgres's cloneQueryConfig) on every statement; the client's types (TYPES, the
 * pool's) parse the rows all the same.
 */
class LimitedQuery extends pg.Query {
  suspended = false
  private readonly limit: number

  /** Set by threeParts before the query is submitted. */
  declare callback: Done

  constructor(text: string, values: unknown[], limit: number) {
    super(text, values)
    ;(this as unknown as { queryMode: string }).queryMode = 'extended'
    this.limit = limit
  }

  _getRows(connection: { execute(c: { portal: string; rows: number }): void; sync(): void }): void {
    connection.execute({ portal: '', rows: this.limit })
    connection.sync()
  }

  handlePortalSuspended(): void {
    this.suspended = true
  }
}

/*
 * The opening and the closing: simple queries whose answers are only command tags (and the one row
 * of pg_advisory_unlock_all()), which nobody reads. node-postgres would build a Result per command
 * (ten for the closing: a regex over each tag, the row's fields); this Query keeps none of it and
 * reports only success or the error. Still a pg.Query: a pipelined client accepts no other kind.
 */
class TagsOnly extends pg.Query {
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleCommandComplete(): void {}
}

/** The outcome of one of a statement's three parts. */
type Part<T> = { ok: true; value: T } | { ok: false; error: unknown }
const DONE: Part<undefined> = { ok: true, value: undefined }
// replaced by every part's answer before the three are read
const PENDING = { ok: false, error: new Error('no answer') } as const
type Parts = [Part<undefined>, Part<LimitedResult>, Part<undefined>]

const CLOSE_READ = `rollback; ${RESET_SESSION}`
const CLOSE_WRITE = `commit; ${RESET_SESSION}`

/**
 * The opening, the statement and the closing written at once (the socket corked around them) and
 * answered in order; settles when all three are answered: a failing part does not stop the others.
 */
function threeParts(client: pg.PoolClient, opening: string, statement: LimitedQuery, closing: string): Promise<Parts> {
  return new Promise((resolve) => {
    const out: Parts = [PENDING, PENDING, PENDING]
    // counted rather than taken from the closing's answer alone: a part failed by the client
    // (a lost connection) is answered on a later tick. Each callback settles inline: a closure
    // assigned to a name would be named by the TypeScript loader on every statement.
    let left = 3
    statement.callback = (err, r) => {
      out[1] =
        err === undefined || err === null
          ? {
              ok: true,
              value: {
                rows: r.rows as Record<string, unknown>[],
                rowCount: r.rowCount,
                suspended: statement.suspended,
              },
            }
          : { ok: false, error: err }
      if (--left === 0) resolve(out)
    }
    const stream = client.connection.stream as Duplex & { cork?: () => void; uncork?: () => void }
    stream.cork?.()
    try {
      client.query(
        new TagsOnly(opening, (err) => {
          out[0] = err === undefined || err === null ? DONE : { ok: false, error: err }
          if (--left === 0) resolve(out)
        }),
      )
      client.query(statement)
      client.query(
        new TagsOnly(closing, (err) => {
          out[2] = err === undefined || err === null ? DONE : { ok: false, error: err }
          if (--left === 0) resolve(out)
        }),
      )
    } finally {
      stream.uncork?.()
    }
  })
}

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
    // a statement's parts are written together and answered in order (the header)
    pipeline: true,
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
      const rendered = renderPg(st)
      const text = st.checkedText ?? rendered.text
      // a newline before the closing parenthesis: the query may end in a -- comment
      const sqlText =
        st.readOnly && st.checkedText !== undefined
          ? `select * from (\n${text}\n) as platform_read limit ${String(st.maxRows + 1)}`
          : text
      // one round trip for the three parts (the header); the opening has no user text: the
      // timeout is an integer of the platform's, validated and clamped
      const [opened, ran, closed] = await threeParts(
        client,
        `${st.readOnly ? 'begin transaction read only' : 'begin'}; set local statement_timeout = ${String(Math.max(1, Math.floor(st.timeoutMs)))}`,
        new LimitedQuery(sqlText, rendered.values, st.readOnly ? st.maxRows + 1 : 0),
        st.readOnly ? CLOSE_READ : CLOSE_WRITE,
      )
      // the session reset failing leaves the connection in an unknown state: it is not reused
      const broken = closed.ok
        ? undefined
        : closed.error instanceof Error
          ? closed.error
          : new Error(String(closed.error))
      client.release(broken)
      // the first failure is the cause (a failed opening makes the statement fail too)
      if (!opened.ok) throw pgError(opened.error)
      if (!ran.ok) throw pgError(ran.error)
      if (broken !== undefined) throw pgError(broken)
      const rows = ran.value.rows
      return {
        rows: rows.length > st.maxRows ? rows.slice(0, st.maxRows) : rows,
        truncated: rows.length > st.maxRows || ran.value.suspended,
        affectedRows: st.readOnly ? null : ran.value.rowCount,
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
