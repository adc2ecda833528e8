import type { Static } from '@sinclair/typebox'
import type { ExecutionLogQuery, RequestLogQuery } from '../../schemas/analytics.ts'
import type { ClickHouseHttp, Param } from './clickhouse-http.ts'
import { EXECUTION_LOGS, REQUEST_LOGS } from './tables.ts'

/*
 * The two log pages as ClickHouse selects: every filter a condition on a `_params` value (never
 * text in the SQL; src/analytics/clickhouse-http.ts says why not `{name:Type}`), newest first,
 * offset pagination like the other list routes (`limit` ≤ 1000, `offset`), with the total count
 * of matching rows. LIMIT and OFFSET are integers the route's schema checked (ClickHouse takes no
 * scalar subquery there).
 */
type RequestQuery = Static<typeof RequestLogQuery>
type ExecutionQuery = Static<typeof ExecutionLogQuery>

export interface Page<T> {
  items: T[]
  total: number
}

class Where {
  readonly conditions: string[] = []
  readonly params: Record<string, Param> = {}
  add(column: string, op: string, name: string, type: string, value: string | number | undefined): void {
    if (value === undefined) return
    this.conditions.push(`${column} ${op} (SELECT ${name} FROM _params)`)
    this.params[name] = { type, value }
  }
  range(q: { from?: string | undefined; to?: string | undefined; min_duration_ms?: number | undefined }): void {
    this.add('ts_ms', '>=', 'from_ms', 'UInt64', q.from === undefined ? undefined : Date.parse(q.from))
    this.add('ts_ms', '<=', 'to_ms', 'UInt64', q.to === undefined ? undefined : Date.parse(q.to))
    this.add('duration_ms', '>=', 'min_ms', 'Float64', q.min_duration_ms)
  }
  get sql(): string {
    return this.conditions.length === 0 ? '' : ` WHERE ${this.conditions.join(' AND ')}`
  }
}

const isoOf = (ms: number): string => new Date(ms).toISOString()
const int = (n: number | undefined, fallback: number): string => String(Math.trunc(n ?? fallback))

async function page<R extends { ts_ms: number }>(
  ch: ClickHouseHttp,
  table: string,
  columns: string,
  tieBreak: string,
  where: Where,
  q: { limit?: number | undefined; offset?: number | undefined },
): Promise<{ rows: R[]; total: number }> {
  const [rows, count] = await Promise.all([
    ch.select<R>(
      `SELECT ts_ms, ${columns} FROM ${table}${where.sql} ORDER BY ts_ms DESC, ${tieBreak} DESC LIMIT ${int(q.offset, 0)}, ${int(q.limit, 100)}`,
      where.params,
    ),
    ch.select<{ n: number }>(`SELECT count() AS n FROM ${table}${where.sql}`, where.params),
  ])
  return { rows, total: count[0]?.n ?? 0 }
}

const REQUEST_COLUMNS =
  'method, route, status, duration_ms, user_id, namespace, bytes_in, bytes_out, client_ip, request_id, trace_id'

export async function listRequestLogs(ch: ClickHouseHttp, database: string, q: RequestQuery): Promise<Page<object>> {
  const w = new Where()
  w.range(q)
  w.add('user_id', '=', 'user_id', 'String', q.user_id)
  w.add('route', '=', 'route', 'String', q.route)
  if (q.status_class !== undefined) {
    const lo = Number(q.status_class[0]) * 100
    w.add('status', '>=', 'status_lo', 'UInt16', lo)
    w.add('status', '<', 'status_hi', 'UInt16', lo + 100)
  }
  const { rows, total } = await page<{ ts_ms: number } & Record<string, unknown>>(
    ch,
    `${database}.${REQUEST_LOGS}`,
    REQUEST_COLUMNS,
    'request_id',
    w,
    q,
  )
  return { items: rows.map(({ ts_ms, ...rest }) => ({ time: isoOf(ts_ms), ...rest })), total }
}

const EXECUTION_COLUMNS =
  'execution_id, kind, namespace, name, pool, user_id, status, attempt, duration_ms, error_code, error, trigger_type, trace_id'

export async function listExecutionLogs(
  ch: ClickHouseHttp,
  database: string,
  q: ExecutionQuery,
): Promise<Page<object>> {
  const w = new Where()
  w.range(q)
  w.add('user_id', '=', 'user_id', 'String', q.user_id)
  w.add('kind', '=', 'kind', 'String', q.kind)
  w.add('namespace', '=', 'namespace', 'String', q.namespace)
  w.add('name', '=', 'name', 'String', q.name)
  w.add('status', '=', 'status', 'String', q.status)
  const { rows, total } = await page<{ ts_ms: number } & Record<string, unknown>>(
    ch,
    `${database}.${EXECUTION_LOGS}`,
    EXECUTION_COLUMNS,
    'execution_id',
    w,
    q,
  )
  return { items: rows.map(({ ts_ms, ...rest }) => ({ time: isoOf(ts_ms), ...rest })), total }
}
