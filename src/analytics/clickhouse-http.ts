import { randomBytes } from 'node:crypto'

/*
 * The analytics store: ClickHouse over its HTTP interface with `fetch`. It is the operator's own
 * server (ANALYTICS_HOST), not a target a user names, so it does not go through the guarded
 * outbound client (src/platform/outbound-http.ts), whose address checks exist for user-given URLs.
 *
 * Values never enter SQL text. Server-side query parameters (`{name:Type}`) exist only since
 * ClickHouse 19.x and Debian's clickhouse-server is 18.16, so the values travel the way every
 * version takes them (as src/data/drivers/clickhouse.ts does): external data, a one-row
 * temporary table `_params` with typed columns in a multipart body, read in the query as
 * `(SELECT name FROM _params)`. Inserts send rows as JSONEachRow in the body.
 */
export interface ClickHouseSettings {
  host: string
  port: number
  user: string
  password: string
  /** Each request gives up after this long (a slow store never holds a caller longer). */
  timeoutMs: number
}

/** A typed value for `_params` (`UInt64`, `String`, `Float64`, …). */
export interface Param {
  type: string
  value: string | number
}

export interface ClickHouseHttp {
  /** A statement without result rows (DDL, ALTER). */
  exec(sql: string): Promise<void>
  /** `FORMAT JSON` rows; `params` are readable as `(SELECT <name> FROM _params)`. */
  select<R>(sql: string, params?: Record<string, Param>): Promise<R[]>
  /** Rows into `table` (qualified name) as JSONEachRow. */
  insert(table: string, rows: readonly object[]): Promise<void>
}

export class ClickHouseError extends Error {
  override name = 'ClickHouseError'
}

export function clickHouseHttp(s: ClickHouseSettings): ClickHouseHttp {
  const base = `http://${s.host.includes(':') ? `[${s.host}]` : s.host}:${String(s.port)}/`
  const auth: Record<string, string> = { 'X-ClickHouse-User': s.user === '' ? 'default' : s.user }
  if (s.password !== '') auth['X-ClickHouse-Key'] = s.password

  const post = async (
    settings: Record<string, string>,
    body: string | Buffer,
    contentType?: string,
  ): Promise<string> => {
    let res: Response
    try {
      res = await fetch(`${base}?${new URLSearchParams(settings).toString()}`, {
        method: 'POST',
        headers: contentType === undefined ? auth : { ...auth, 'Content-Type': contentType },
        body,
        signal: AbortSignal.timeout(s.timeoutMs),
      })
    } catch (err) {
      const why = err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err)
      throw new ClickHouseError(`ClickHouse unreachable at ${s.host}:${String(s.port)}: ${why}`)
    }
    const text = await res.text()
    if (res.status !== 200)
      throw new ClickHouseError(`ClickHouse answered ${String(res.status)}: ${text.trim().slice(0, 500)}`)
    return text
  }

  return {
    async exec(sql) {
      await post({ wait_end_of_query: '1' }, sql)
    },
    async select<R>(sql: string, params: Record<string, Param> = {}): Promise<R[]> {
      const names = Object.keys(params)
      const settings: Record<string, string> = {
        query: `${sql} FORMAT JSON`,
        output_format_json_quote_64bit_integers: '0',
        readonly: '1',
      }
      let body = ''
      let type: string | undefined
      if (names.length > 0) {
        settings['_params_structure'] = names.map((n) => `${n} ${(params[n] as Param).type}`).join(', ')
        settings['_params_format'] = 'JSONEachRow'
        const row = Object.fromEntries(names.map((n) => [n, (params[n] as Param).value]))
        const boundary = `----analytics${randomBytes(12).toString('hex')}`
        type = `multipart/form-data; boundary=${boundary}`
        body = `--${boundary}\r\nContent-Disposition: form-data; name="_params"; filename="_params"\r\nContent-Type: application/octet-stream\r\n\r\n${JSON.stringify(row)}\n\r\n--${boundary}--\r\n`
      }
      const text = await post(settings, body, type)
      return ((JSON.parse(text) as { data?: R[] }).data ?? []) as R[]
    },
    async insert(table, rows) {
      if (rows.length === 0) return
      let body = ''
      for (const r of rows) body += `${JSON.stringify(r)}\n`
      await post({ query: `INSERT INTO ${table} FORMAT JSONEachRow` }, body)
    },
  }
}
