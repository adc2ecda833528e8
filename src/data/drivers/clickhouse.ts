import { randomBytes } from 'node:crypto'
import http from 'node:http'
import https from 'node:https'
import { AppError } from '../../kernel/errors.ts'
import type { ConnectionSettings, DataPool, PoolTiming, Statement, StatementResult } from './types.ts'

/*
 * ClickHouse over its HTTP interface, with a keep-alive agent per connection as the pool
 * (`maxSockets` = max_pool_size). Written against the HTTP interface directly rather than
 * `@clickhouse/client`, because of how parameters are bound:
 *
 *   Server-side query parameters (`{name:Type}` with `param_name=`) exist only since ClickHouse
 *   19.x; Debian's clickhouse-server (18.16, what the tests run) answers "Unknown setting param_x".
 *   The one binding every version has is *external data*: the values go as a one-row temporary
 *   table `_params` in a multipart body (typed columns, JSONEachRow), and each `:name` becomes
 *   `(SELECT name FROM _params)`. The values are data, never parsed as SQL, on every version.
 *   `@clickhouse/client` cannot send external data, so the driver speaks HTTP itself.
 *   (Consequence: a parameter stands where a scalar subquery may — not in LIMIT or as a table name.)
 *
 * Reads run with `readonly=1` (the server refuses every write, code 164), `max_result_rows` =
 * max_rows + 1 with `result_overflow_mode=break` (the server stops producing rows at the cap,
 * rounded up to a block; the driver keeps max_rows) and `max_execution_time` (whole seconds,
 * rounded up; the HTTP request also gives up at timeout_ms + 1 s).
 */
const ERR_READONLY = new Set([164])
const ERR_TIMEOUT = new Set([159, 209, 210])
const ERR_AUTH = new Set([192, 193, 194, 516])

/** The ClickHouse type of a value, from its JSON type. */
function chType(v: unknown): string {
  if (v === null || v === undefined) return 'Nullable(String)'
  if (typeof v === 'boolean') return 'UInt8'
  if (typeof v === 'number') return Number.isSafeInteger(v) ? 'Int64' : 'Float64'
  if (typeof v === 'string') return 'String'
  if (Array.isArray(v) && v.length > 0) {
    const inner = [...new Set(v.map(chType))]
    if (inner.length === 1 && !(inner[0] as string).startsWith('Array') && inner[0] !== 'Nullable(String)')
      return `Array(${inner[0] as string})`
    if (inner.every((t) => t === 'Int64' || t === 'Float64')) return 'Array(Float64)'
  }
  if (Array.isArray(v) && v.length === 0) return 'Array(String)'
  return 'String' // objects and mixed arrays: JSON text
}

const chValue = (v: unknown, type: string): unknown =>
  type === 'String' && typeof v !== 'string'
    ? JSON.stringify(v)
    : type === 'UInt8' && typeof v === 'boolean'
      ? v
        ? 1
        : 0
      : (v ?? null)

export function renderClickHouse(st: Pick<Statement, 'pieces' | 'params'>): {
  query: string
  structure: string | null
  row: Record<string, unknown>
} {
  let query = ''
  const used = new Map<string, string>()
  for (const p of st.pieces) {
    if ('text' in p) query += p.text
    else {
      used.set(p.param, chType(st.params[p.param]))
      query += `(SELECT ${p.param} FROM _params)`
    }
  }
  const row = Object.fromEntries([...used].map(([name, type]) => [name, chValue(st.params[name], type)]))
  const structure = used.size === 0 ? null : [...used].map(([name, type]) => `${name} ${type}`).join(', ')
  return { query, structure, row }
}

function chError(status: number, text: string): AppError {
  const code = Number(/Code: (\d+)/.exec(text)?.[1] ?? NaN)
  const message = text.trim().slice(0, 2000)
  if (ERR_READONLY.has(code)) return AppError.of('query.read_only', `refused by the database: ${message}`)
  if (ERR_TIMEOUT.has(code))
    return AppError.of('query.timeout', `the statement ran longer than its timeout (${message})`)
  if (ERR_AUTH.has(code) || status === 401 || status === 403)
    return AppError.of('database.unreachable', `the database refused the login: ${message}`)
  return AppError.of('query.failed', `the database refused the statement: ${message}`)
}

export function clickhousePool(s: ConnectionSettings, timing: PoolTiming): DataPool {
  const tls = s.sslMode !== null && s.sslMode !== 'disable'
  const agent = tls
    ? new https.Agent({
        keepAlive: true,
        maxSockets: s.maxPool,
        maxFreeSockets: Math.max(1, s.minPool),
        timeout: timing.idleMs,
        rejectUnauthorized: s.sslMode === 'verify-ca' || s.sslMode === 'verify-full',
      })
    : new http.Agent({
        keepAlive: true,
        maxSockets: s.maxPool,
        maxFreeSockets: Math.max(1, s.minPool),
        timeout: timing.idleMs,
      })
  const headers: Record<string, string> = { 'X-ClickHouse-User': s.username === '' ? 'default' : s.username }
  if (s.password !== null) headers['X-ClickHouse-Key'] = s.password

  const post = (
    params: URLSearchParams,
    body: Buffer,
    contentType: string | null,
    timeoutMs: number,
  ): Promise<{ status: number; text: string }> =>
    new Promise((resolve, reject) => {
      const req = (tls ? https : http).request(
        {
          host: s.host,
          port: s.port,
          method: 'POST',
          path: `/?${params.toString()}`,
          agent,
          headers: {
            ...headers,
            ...(contentType === null ? {} : { 'Content-Type': contentType }),
            'Content-Length': String(body.length),
          },
        },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (c: Buffer) => chunks.push(c))
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }))
          res.on('error', reject)
        },
      )
      // the connect phase has its own limit; the whole exchange the statement's
      const connectTimer = setTimeout(
        () => req.destroy(Object.assign(new Error('connect timeout'), { code: 'ETIMEDOUT' })),
        timing.connectTimeoutMs,
      )
      req.on('socket', (sock) =>
        sock.connecting ? sock.once('connect', () => clearTimeout(connectTimer)) : clearTimeout(connectTimer),
      )
      req.setTimeout(timeoutMs, () =>
        req.destroy(
          Object.assign(new Error('the statement ran longer than its timeout'), { code: 'STATEMENT_TIMEOUT' }),
        ),
      )
      req.on('error', (err: Error & { code?: string }) => {
        clearTimeout(connectTimer)
        reject(
          err.code === 'STATEMENT_TIMEOUT'
            ? AppError.of('query.timeout', err.message)
            : AppError.of('database.unreachable', `could not reach the database: ${err.message}`),
        )
      })
      req.end(body)
    })

  const exec = async (
    query: string,
    settings: Record<string, string>,
    external: { structure: string; row: Record<string, unknown> } | null,
    timeoutMs: number,
  ) => {
    const params = new URLSearchParams({ ...(s.database === '' ? {} : { database: s.database }), ...settings, query })
    let body = Buffer.alloc(0)
    let type: string | null = null
    if (external !== null) {
      params.set('_params_structure', external.structure)
      params.set('_params_format', 'JSONEachRow')
      const boundary = `----platform${randomBytes(12).toString('hex')}`
      type = `multipart/form-data; boundary=${boundary}`
      body = Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="_params"; filename="_params"\r\nContent-Type: application/octet-stream\r\n\r\n${JSON.stringify(external.row)}\n\r\n--${boundary}--\r\n`,
      )
    }
    const res = await post(params, body, type, timeoutMs)
    if (res.status !== 200) throw chError(res.status, res.text)
    return res.text
  }

  return {
    type: 'clickhouse',
    async run(st): Promise<StatementResult> {
      const { query, structure, row } = renderClickHouse(st)
      const seconds = String(Math.max(1, Math.ceil(st.timeoutMs / 1000)))
      const settings: Record<string, string> = st.readOnly
        ? {
            readonly: '1',
            max_result_rows: String(st.maxRows + 1),
            result_overflow_mode: 'break',
            max_execution_time: seconds,
            default_format: 'JSON',
            output_format_json_quote_64bit_integers: '0',
          }
        : {
            max_execution_time: seconds,
            default_format: 'JSON',
            output_format_json_quote_64bit_integers: '0',
            wait_end_of_query: '1',
          }
      const text = await exec(query, settings, structure === null ? null : { structure, row }, st.timeoutMs + 1000)
      if (text.trim() === '') return { rows: [], truncated: false, affectedRows: null }
      let parsed: { data?: unknown }
      try {
        parsed = JSON.parse(text) as { data?: unknown }
      } catch {
        throw AppError.of(
          'query.failed',
          'the database answered something that is not JSON (a FORMAT clause in the SQL?)',
        )
      }
      const rows = Array.isArray(parsed.data) ? (parsed.data as Record<string, unknown>[]) : []
      return { rows: rows.slice(0, st.maxRows), truncated: rows.length > st.maxRows, affectedRows: null }
    },
    async serverVersion(timeoutMs) {
      const text = await exec('SELECT version() AS v', { readonly: '1', default_format: 'JSON' }, null, timeoutMs)
      const v = (JSON.parse(text) as { data?: { v?: string }[] }).data?.[0]?.v
      return `ClickHouse ${String(v)}`
    },
    async close() {
      agent.destroy()
    },
  }
}
