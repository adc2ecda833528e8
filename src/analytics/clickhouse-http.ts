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
  /**
   * JSONEachRow text (whole lines) into `table` (qualified name), sent as it is. Unknown fields are
   * skipped and up to 100 malformed lines per insert too; more fail the insert (ClickHouseRefusal).
   */
  insert(table: string, text: readonly (string | Uint8Array)[]): Promise<void>
}

/** ClickHouse could not be reached or did not answer in time. */
export class ClickHouseError extends Error {
  override name = 'ClickHouseError'
}

/** ClickHouse answered, with an error (the statement or its data is wrong): retrying cannot help. */
export class ClickHouseRefusal extends ClickHouseError {
  override name = 'ClickHouseRefusal'
}

export function clickHouseHttp(s: ClickHouseSettings): ClickHouseHttp {
  const base = `http://${s.host.includes(':') ? `[${s.host}]` : s.host}:${String(s.port)}/`
  const auth: Record<string, string> = { 'X-ClickHouse-User': s.user === '' ? 'default' : s.user }
  if (s.password !== '') auth['X-ClickHouse-Key'] = s.password

  const post = async (
    settings: Record<string, string>,
    body: string | Buffer | Blob,
    contentType?: string,
  ): Promise<string> => {
    let res: Response
    let text: string
    try {
      res = await fetch(`${base}?${new URLSearchParams(settings).toString()}`, {
        method: 'POST',
        headers: contentType === undefined ? auth : { ...auth, 'Content-Type': contentType },
        body,
        signal: AbortSignal.timeout(s.timeoutMs),
      })
      text = await res.text()
    } catch (err) {
      const why = err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err)
      throw new ClickHouseError(`ClickHouse unreachable at ${s.host}:${String(s.port)}: ${why}`)
    }
    if (res.status !== 200) {
      const message = `ClickHouse answered ${String(res.status)}: ${text.trim().slice(0, 500)}`
      // an overloaded or starting server (503) is worth another try; an error about the statement is not
      throw res.status === 503 ? new ClickHouseError(message) : new ClickHouseRefusal(message)
    }
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
    async insert(table, text) {
      if (text.length === 0) return
      await post(
        {
          query: `INSERT INTO ${table} FORMAT JSONEachRow`,
          input_format_skip_unknown_fields: '1',
          input_format_allow_errors_num: '100',
        },
        new Blob(text as (string | Uint8Array<ArrayBuffer>)[]),
      )
    },
  }
}
