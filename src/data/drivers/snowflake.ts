import { randomUUID } from 'node:crypto'
import { AppError } from '../../kernel/errors.ts'
import { guardedFetch, type OutboundDeps, type OutboundResponse } from '../../platform/outbound-http.ts'
import type { ConnectionSettings, DataPool, Statement, StatementResult } from './types.ts'

/*
 * Snowflake through its REST SQL API (`POST /api/v2/statements`), every request through the one
 * guarded outbound client (an administrator chose the host: private addresses are admitted like
 * for LLM providers, link-local and the other special ranges stay refused). The "pool" is the
 * client's own keep-alive; nothing stays open between statements.
 *
 *  - Auth: `Authorization: Bearer <password>` with `X-Snowflake-Authorization-Token-Type`
 *    (`config.token_type`, default OAUTH): the SQL API takes OAuth, key-pair JWT or programmatic
 *    access tokens, never a plain password.
 *  - Parameters: each `:name` becomes `?` with a positional binding `{type, value}` (TEXT, FIXED,
 *    REAL, BOOLEAN); the statement text holds only the author's SQL. MULTI_STATEMENT_COUNT=1.
 *  - Reads: Snowflake has no read-only transaction, so a read is wrapped as
 *    `SELECT * FROM (<sql>) AS platform_read LIMIT max_rows + 1`: the warehouse stops at the cap, and anything that
 *    is not a query (INSERT, DELETE, DDL…) is a syntax error there — refused by the database, not
 *    by a pattern in the platform. `config.read_role` (a role granted SELECT only) runs reads when
 *    set. The wrapping does not keep an ORDER BY of the inner query guaranteed.
 *  - Timeout: the body's `timeout` (whole seconds, rounded up); a statement still running when the
 *    synchronous wait ends (HTTP 202) is polled until done or timeout_ms, then cancelled.
 *  - Results: `resultSetMetaData.rowType` names the columns; values come as strings and are
 *    converted by type (FIXED without scale and REAL to numbers, BOOLEAN to booleans); further
 *    partitions are fetched until max_rows + 1 rows are in hand.
 */
const POLL_MS = 200
const MAX_RESPONSE_BYTES = 64 * 1024 * 1024

interface RowType {
  name: string
  type: string
  scale?: number | null
}
interface SnowflakeBody {
  code?: string
  message?: string
  sqlState?: string
  statementHandle?: string
  statementStatusUrl?: string
  data?: (string | null)[][]
  resultSetMetaData?: { numRows?: number; rowType?: RowType[]; partitionInfo?: unknown[] }
  stats?: { numRowsInserted?: number; numRowsUpdated?: number; numRowsDeleted?: number }
}

function binding(v: unknown): { type: string; value: string | null } {
  if (v === null || v === undefined) return { type: 'TEXT', value: null }
  if (typeof v === 'boolean') return { type: 'BOOLEAN', value: String(v) }
  if (typeof v === 'number') return { type: Number.isInteger(v) ? 'FIXED' : 'REAL', value: String(v) }
  if (typeof v === 'string') return { type: 'TEXT', value: v }
  return { type: 'TEXT', value: JSON.stringify(v) }
}

export function renderSnowflake(st: Pick<Statement, 'pieces' | 'params'>): {
  text: string
  bindings: Record<string, { type: string; value: string | null }>
} {
  let text = ''
  const bindings: Record<string, { type: string; value: string | null }> = {}
  let n = 0
  for (const p of st.pieces) {
    if ('text' in p) text += p.text
    else {
      n++
      bindings[String(n)] = binding(st.params[p.param])
      text += '?'
    }
  }
  return { text, bindings }
}

function convert(value: string | null, t: RowType): unknown {
  if (value === null) return null
  const type = t.type.toLowerCase()
  if (type === 'boolean') return value === 'true' || value === '1'
  if (type === 'real' || (type === 'fixed' && (t.scale ?? 0) === 0)) {
    const n = Number(value)
    return Number.isFinite(n) && (type === 'real' || Number.isSafeInteger(n)) ? n : value
  }
  return value
}

function parseBody(res: OutboundResponse): SnowflakeBody {
  try {
    return JSON.parse(res.body.toString('utf8')) as SnowflakeBody
  } catch {
    throw AppError.of('database.unreachable', `the warehouse answered HTTP ${String(res.status)} without JSON`)
  }
}

function sfError(status: number, body: SnowflakeBody): AppError {
  const msg = `${body.message ?? `HTTP ${String(status)}`}${body.code === undefined ? '' : ` (code ${body.code})`}`
  if (body.sqlState === '25006') return AppError.of('query.read_only', `refused by the warehouse: ${msg}`)
  if (status === 401 || status === 403)
    return AppError.of('database.unreachable', `the warehouse refused the login: ${msg}`)
  if (status === 408 || body.code === '000630' || /timeout|cancel/i.test(body.message ?? ''))
    return AppError.of('query.timeout', `the statement ran longer than its timeout: ${msg}`)
  if (status === 422 || status === 400)
    return AppError.of('query.failed', `the warehouse refused the statement: ${msg}`)
  return AppError.of('database.unreachable', `the warehouse failed: ${msg}`)
}

export function snowflakePool(s: ConnectionSettings, outbound: OutboundDeps = {}): DataPool {
  const scheme = s.sslMode === 'disable' ? 'http' : 'https'
  const base = `${scheme}://${s.host}:${String(s.port)}`
  const headers = {
    Authorization: `Bearer ${s.password ?? ''}`,
    'X-Snowflake-Authorization-Token-Type': s.config.token_type ?? 'OAUTH',
    'Content-Type': 'application/json',
    Accept: 'application/json',
    'User-Agent': 'agent-platform',
  }
  const call = async (method: string, path: string, deadline: number, body?: unknown): Promise<OutboundResponse> => {
    const timeoutMs = Math.max(1, deadline - Date.now())
    try {
      return await guardedFetch(
        `${base}${path}`,
        {
          method,
          headers,
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          timeoutMs,
          httpsOnly: scheme === 'https',
          allowPrivate: true,
          maxResponseBytes: MAX_RESPONSE_BYTES,
        },
        outbound,
      )
    } catch (err) {
      if (err instanceof AppError && err.code === 'outbound.timeout')
        throw AppError.of('query.timeout', 'the warehouse did not answer within the timeout')
      if (err instanceof AppError && err.code.startsWith('outbound.'))
        throw AppError.of('database.unreachable', `could not reach the warehouse: ${err.message}`)
      throw err
    }
  }

  const execute = async (
    statement: string,
    bindings: Record<string, unknown>,
    role: string | undefined,
    timeoutMs: number,
  ): Promise<{ body: SnowflakeBody; handle: string }> => {
    const deadline = Date.now() + timeoutMs + 2000
    const request = {
      statement,
      timeout: Math.max(1, Math.ceil(timeoutMs / 1000)),
      ...(s.database === '' ? {} : { database: s.database }),
      ...(s.config.schema === undefined ? {} : { schema: s.config.schema }),
      ...(s.config.warehouse === undefined ? {} : { warehouse: s.config.warehouse }),
      ...(role === undefined ? {} : { role }),
      ...(Object.keys(bindings).length === 0 ? {} : { bindings }),
      parameters: { MULTI_STATEMENT_COUNT: '1' },
    }
    let res = await call('POST', `/api/v2/statements?requestId=${randomUUID()}&nullable=true`, deadline, request)
    let body = parseBody(res)
    // 202: still running; poll its status URL until it ends or the timeout passes, then cancel it
    while (res.status === 202) {
      const handle = body.statementHandle
      if (handle === undefined || !/^[A-Za-z0-9-]+$/.test(handle))
        throw AppError.of('database.unreachable', 'the warehouse answered 202 without a statement handle')
      if (Date.now() + POLL_MS >= deadline) {
        await call('POST', `/api/v2/statements/${handle}/cancel`, Date.now() + 5000, {}).catch(() => undefined)
        throw AppError.of('query.timeout', 'the statement ran longer than its timeout (cancelled)')
      }
      await new Promise((r) => setTimeout(r, POLL_MS))
      res = await call('GET', `/api/v2/statements/${handle}`, deadline)
      body = parseBody(res)
    }
    if (res.status !== 200) throw sfError(res.status, body)
    return { body, handle: body.statementHandle ?? '' }
  }

  const rowsOf = (body: SnowflakeBody): Record<string, unknown>[] => {
    const types = body.resultSetMetaData?.rowType ?? []
    return (body.data ?? []).map((r) => Object.fromEntries(types.map((t, i) => [t.name, convert(r[i] ?? null, t)])))
  }

  return {
    type: 'snowflake',
    async run(st): Promise<StatementResult> {
      const { text, bindings } = renderSnowflake(st)
      const cap = st.maxRows + 1
      const statement = st.readOnly ? `SELECT * FROM (${text}\n) AS platform_read LIMIT ${String(cap)}` : text
      const role = st.readOnly ? (s.config.read_role ?? s.config.role) : s.config.role
      const { body, handle } = await execute(statement, bindings, role, st.timeoutMs)
      const rows = rowsOf(body)
      const partitions = body.resultSetMetaData?.partitionInfo?.length ?? 1
      for (let part = 1; part < partitions && rows.length < cap; part++) {
        const res = await call(
          'GET',
          `/api/v2/statements/${handle}?partition=${String(part)}`,
          Date.now() + st.timeoutMs,
        )
        const more = parseBody(res)
        if (res.status !== 200) throw sfError(res.status, more)
        rows.push(...rowsOf({ ...more, resultSetMetaData: body.resultSetMetaData ?? {} }))
      }
      const stats = body.stats
      const affected =
        stats === undefined
          ? null
          : (stats.numRowsInserted ?? 0) + (stats.numRowsUpdated ?? 0) + (stats.numRowsDeleted ?? 0)
      return {
        rows: rows.slice(0, st.maxRows),
        truncated: rows.length > st.maxRows,
        affectedRows: st.readOnly ? null : affected,
      }
    },
    async serverVersion(timeoutMs) {
      const { body } = await execute(
        'SELECT CURRENT_VERSION() AS V',
        {},
        s.config.read_role ?? s.config.role,
        timeoutMs,
      )
      return `Snowflake ${String(rowsOf(body)[0]?.['V'])}`
    },
    async close() {
      // nothing held open between statements
    },
  }
}
