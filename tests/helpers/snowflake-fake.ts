import { randomUUID } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import pg from 'pg'

/*
 * A local server playing Snowflake's REST SQL API v2 (no Snowflake is reachable from here), backed
 * by a real Postgres database that executes the statements:
 *
 *   POST /api/v2/statements[?requestId&nullable]   {statement, timeout, database, schema, warehouse, role, bindings, parameters}
 *   GET  /api/v2/statements/{handle}[?partition=N] status / result partitions
 *   POST /api/v2/statements/{handle}/cancel
 *
 * As Snowflake does: `Authorization: Bearer <token>` plus `X-Snowflake-Authorization-Token-Type`
 * (401 otherwise); positional `?` bindings `{"1": {type, value}}` (values are strings); results as
 * `resultSetMetaData.rowType` + `data` (every value a string or null) in partitions of
 * `partitionRows`; 200 when done within `syncWaitMs`, else 202 with a statement handle to poll;
 * 422 with `{code, message, sqlState}` for a failing statement; the body's `timeout` (seconds) as
 * the statement timeout. A role listed in `readOnlyRoles` runs in a read-only transaction (a role
 * granted SELECT only). Every request is recorded.
 */
export interface SnowflakeFake {
  url: string
  port: number
  requests: { method: string; path: string; headers: http.IncomingHttpHeaders; body: Record<string, unknown> | null }[]
  close(): Promise<void>
}

interface Options {
  databaseUrl: string
  token: string
  syncWaitMs?: number
  partitionRows?: number
  readOnlyRoles?: string[]
}

interface Statement {
  handle: string
  done: Promise<void>
  finished: boolean
  result?: {
    rowType: { name: string; type: string; scale: number; nullable: boolean }[]
    data: (string | null)[][]
    stats?: Record<string, number>
  }
  error?: { code: string; message: string; sqlState: string }
  cancel: () => void
}

const typeOf = (oid: number): { type: string; scale: number } => {
  if ([20, 21, 23, 26].includes(oid)) return { type: 'fixed', scale: 0 }
  if (oid === 1700) return { type: 'fixed', scale: 2 }
  if ([700, 701].includes(oid)) return { type: 'real', scale: 0 }
  if (oid === 16) return { type: 'boolean', scale: 0 }
  return { type: 'text', scale: 0 }
}

/** `?` outside quotes → `$n` (the statements here are the platform's, simple); Snowflake's CURRENT_VERSION(). */
function positional(sql: string): string {
  sql = sql.replace(/CURRENT_VERSION\(\)/gi, "'8.40.1-fake'")
  let n = 0
  let out = ''
  let quote = ''
  for (const c of sql) {
    if (quote !== '') {
      if (c === quote) quote = ''
      out += c
    } else if (c === "'" || c === '"') {
      quote = c
      out += c
    } else if (c === '?') out += `$${String(++n)}`
    else out += c
  }
  return out
}

export async function startSnowflakeFake(o: Options): Promise<SnowflakeFake> {
  const pool = new pg.Pool({ connectionString: o.databaseUrl, max: 4 })
  const statements = new Map<string, Statement>()
  const requests: SnowflakeFake['requests'] = []
  const partitionRows = o.partitionRows ?? 1000

  const run = (body: Record<string, unknown>): Statement => {
    const handle = randomUUID()
    const st: Statement = { handle, finished: false, done: Promise.resolve(), cancel: () => undefined }
    st.done = (async () => {
      const client = await pool.connect()
      st.cancel = () => {
        void pool.query('select pg_cancel_backend($1)', [(client as unknown as { processID: number }).processID])
      }
      try {
        const readOnly = typeof body['role'] === 'string' && (o.readOnlyRoles ?? []).includes(body['role'])
        await client.query(readOnly ? 'begin transaction read only' : 'begin')
        const timeout = typeof body['timeout'] === 'number' ? body['timeout'] : 0
        if (timeout > 0) await client.query(`set local statement_timeout = ${String(Math.floor(timeout * 1000))}`)
        const bindings = (body['bindings'] ?? {}) as Record<string, { type: string; value: string | null }>
        const values = Object.keys(bindings)
          .sort((a, b) => Number(a) - Number(b))
          .map((k) => bindings[k]?.value ?? null)
        const r = await client.query({ text: positional(String(body['statement'])), values, rowMode: 'array' })
        await client.query('commit')
        const isSelect = r.command === 'SELECT'
        st.result = {
          rowType: isSelect
            ? r.fields.map((f) => ({ name: f.name.toUpperCase(), ...typeOf(f.dataTypeID), nullable: true }))
            : [{ name: 'number of rows affected', type: 'fixed', scale: 0, nullable: false }],
          data: isSelect
            ? (r.rows as unknown[][]).map((row) =>
                row.map((v) =>
                  v === null
                    ? null
                    : v instanceof Date
                      ? v.toISOString()
                      : typeof v === 'object'
                        ? JSON.stringify(v)
                        : String(v),
                ),
              )
            : [[String(r.rowCount ?? 0)]],
          ...(isSelect
            ? {}
            : {
                stats: {
                  [r.command === 'INSERT'
                    ? 'numRowsInserted'
                    : r.command === 'DELETE'
                      ? 'numRowsDeleted'
                      : 'numRowsUpdated']: r.rowCount ?? 0,
                },
              }),
        }
      } catch (err) {
        await client.query('rollback').catch(() => undefined)
        const e = err as { code?: string; message?: string }
        st.error =
          e.code === '57014'
            ? {
                code: '000630',
                message: `Statement reached its statement or warehouse timeout of ${String(body['timeout'])} second(s) and was canceled.`,
                sqlState: '57014',
              }
            : { code: '002003', message: `SQL compilation error: ${e.message ?? ''}`, sqlState: e.code ?? '42000' }
      } finally {
        client.release()
        st.finished = true
      }
    })()
    statements.set(handle, st)
    return st
  }

  const send = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' })
    res.end(JSON.stringify(body))
  }
  const answer = (res: http.ServerResponse, st: Statement, partition: number) => {
    if (!st.finished)
      return send(res, 202, {
        code: '333334',
        message:
          'Asynchronous execution in progress. Use provided query id to perform query monitoring and management.',
        statementHandle: st.handle,
        statementStatusUrl: `/api/v2/statements/${st.handle}`,
      })
    if (st.error !== undefined) return send(res, 422, { ...st.error, statementHandle: st.handle })
    const r = st.result as NonNullable<Statement['result']>
    const parts = Math.max(1, Math.ceil(r.data.length / partitionRows))
    const slice = r.data.slice(partition * partitionRows, (partition + 1) * partitionRows)
    if (partition > 0) return send(res, 200, { data: slice })
    send(res, 200, {
      resultSetMetaData: {
        numRows: r.data.length,
        format: 'jsonv2',
        partitionInfo: Array.from({ length: parts }, (_, i) => ({
          rowCount: r.data.slice(i * partitionRows, (i + 1) * partitionRows).length,
        })),
        rowType: r.rowType,
      },
      data: slice,
      code: '090001',
      statementStatusUrl: `/api/v2/statements/${st.handle}`,
      sqlState: '00000',
      statementHandle: st.handle,
      message: 'Statement executed successfully.',
      createdOn: Date.now(),
      ...(r.stats === undefined ? {} : { stats: r.stats }),
    })
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x')
      let body: Record<string, unknown> | null = null
      try {
        body =
          chunks.length === 0 ? null : (JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>)
      } catch {
        return send(res, 400, { code: '390142', message: 'Incoming request does not contain a valid payload.' })
      }
      requests.push({ method: req.method ?? '', path: url.pathname + url.search, headers: req.headers, body })
      if (
        req.headers.authorization !== `Bearer ${o.token}` ||
        req.headers['x-snowflake-authorization-token-type'] === undefined
      ) {
        return send(res, 401, { code: '390303', message: 'Invalid OAuth access token.' })
      }
      void (async () => {
        const m = /^\/api\/v2\/statements(?:\/([0-9a-f-]+))?(\/cancel)?$/.exec(url.pathname)
        if (m === null) return send(res, 404, { message: 'not found' })
        if (req.method === 'POST' && m[1] === undefined) {
          if (typeof body?.['statement'] !== 'string')
            return send(res, 400, { code: '390142', message: 'statement is required' })
          const st = run(body)
          await Promise.race([st.done, new Promise((r) => setTimeout(r, o.syncWaitMs ?? 1000))])
          return answer(res, st, 0)
        }
        const st = statements.get(m[1] ?? '')
        if (st === undefined) return send(res, 404, { code: '333333', message: 'statement not found' })
        if (m[2] !== undefined) {
          st.cancel()
          return send(res, 200, { code: '000604', message: 'Statement canceled.', statementHandle: st.handle })
        }
        return answer(res, st, Number(url.searchParams.get('partition') ?? '0'))
      })()
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${String(port)}`,
    port,
    requests,
    close: async () => {
      server.closeAllConnections()
      await new Promise((r) => server.close(r))
      await Promise.allSettled([...statements.values()].map((s) => s.done))
      await pool.end()
    },
  }
}
