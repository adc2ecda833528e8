import { Type as T, type Static } from '@sinclair/typebox'
import { Uuid } from './common.ts'

/*
 * Request and execution logs (src/analytics/): the record the gateway publishes per finished
 * request, the queries of `GET /api/v1/request-logs` and `GET /api/v1/execution-logs`, and their
 * answers. Fields never known are '' (not null): the columns in ClickHouse are plain Strings.
 */

/**
 * One finished request as the gateway publishes it: one JSON object per line (JSONEachRow), in
 * the row shape of the `request_logs` table, so the writer passes the lines to ClickHouse as
 * they are (src/analytics/consumers.ts says why).
 */
export const RequestLogRecord = T.Object({
  /** When the request finished, `YYYY-MM-DD hh:mm:ss` in UTC (the partition column). */
  ts: T.String(),
  /** The same instant, epoch milliseconds. */
  ts_ms: T.Integer({ minimum: 0 }),
  method: T.String({ maxLength: 16 }),
  route: T.String({ maxLength: 1024 }),
  status: T.Integer({ minimum: 0, maximum: 999 }),
  duration_ms: T.Number({ minimum: 0 }),
  user_id: T.String({ maxLength: 64 }),
  namespace: T.String({ maxLength: 128 }),
  bytes_in: T.Integer({ minimum: 0 }),
  bytes_out: T.Integer({ minimum: 0 }),
  client_ip: T.String({ maxLength: 64 }),
  request_id: T.String({ maxLength: 160 }),
  trace_id: T.String({ maxLength: 32 }),
})
export type RequestLogRecord = Static<typeof RequestLogRecord>

const Range = {
  from: T.Optional(T.String({ format: 'date-time', description: 'earliest time, inclusive (ISO 8601)' })),
  to: T.Optional(
    T.String({ format: 'date-time', description: 'latest time, inclusive (ISO 8601); not before `from`' }),
  ),
}
const Page = {
  limit: T.Optional(T.Integer({ minimum: 1, maximum: 1000, default: 100 })),
  offset: T.Optional(T.Integer({ minimum: 0, maximum: 1_000_000, default: 0 })),
}
const MinDuration = T.Optional(T.Number({ minimum: 0, description: 'only entries that took at least this long' }))

export const StatusClass = T.Union(
  ['2xx', '3xx', '4xx', '5xx'].map((s) => T.Literal(s)),
  { description: 'status class' },
)

/** Unknown fields are refused (422), not dropped: the route is `strictQuery`. */
export const RequestLogQuery = T.Object(
  {
    ...Range,
    user_id: T.Optional(Uuid),
    route: T.Optional(
      T.String({
        minLength: 1,
        maxLength: 1024,
        description: 'route template, e.g. `/api/v1/agents/{namespace}/{name}`',
      }),
    ),
    status_class: T.Optional(StatusClass),
    min_duration_ms: MinDuration,
    ...Page,
  },
  { additionalProperties: false },
)

export const RequestLogEntry = T.Object({
  time: T.String({ format: 'date-time' }),
  method: T.String(),
  route: T.String({ description: "the route template; '' when no route matched" }),
  status: T.Integer(),
  duration_ms: T.Number(),
  user_id: T.String({ description: "'' for an anonymous request" }),
  namespace: T.String({ description: "the route's namespace parameter; '' when it has none" }),
  bytes_in: T.Integer(),
  bytes_out: T.Integer({ description: 'the body sent (an SSE stream or a file download: 0 / the file size)' }),
  client_ip: T.String(),
  request_id: T.String(),
  trace_id: T.String({ description: "the trace id of the request's W3C traceparent; '' without one" }),
})

export const RequestLogPage = T.Object({
  items: T.Array(RequestLogEntry),
  total: T.Integer({ description: 'entries matching the filters' }),
})

export const ExecutionLogQuery = T.Object(
  {
    ...Range,
    user_id: T.Optional(Uuid),
    kind: T.Optional(T.String({ minLength: 1, maxLength: 64, description: '`function`, `agent`, …' })),
    namespace: T.Optional(T.String({ minLength: 1, maxLength: 63 })),
    name: T.Optional(T.String({ minLength: 1, maxLength: 63 })),
    status: T.Optional(
      T.Union(
        ['completed', 'failed', 'cancelled'].map((s) => T.Literal(s)),
        { description: 'the final status' },
      ),
    ),
    min_duration_ms: MinDuration,
    ...Page,
  },
  { additionalProperties: false },
)

/** One finished execution (a job's final event). */
export const ExecutionLogRecord = T.Object({
  /** When the execution finished, epoch milliseconds. */
  ts: T.Integer({ minimum: 0 }),
  execution_id: T.String(),
  kind: T.String(),
  namespace: T.String(),
  name: T.String(),
  pool: T.String(),
  user_id: T.String(),
  status: T.String(),
  attempt: T.Integer({ minimum: 0 }),
  duration_ms: T.Number({ minimum: 0 }),
  error_code: T.String(),
  error: T.String(),
  trigger_type: T.String(),
  trace_id: T.String(),
})
export type ExecutionLogRecord = Static<typeof ExecutionLogRecord>

export const ExecutionLogEntry = T.Object({
  time: T.String({ format: 'date-time', description: 'when the execution finished' }),
  execution_id: T.String(),
  kind: T.String(),
  namespace: T.String(),
  name: T.String(),
  pool: T.String(),
  user_id: T.String(),
  status: T.String(),
  attempt: T.Integer(),
  duration_ms: T.Number({ description: 'from start to finish; 0 when it never started' }),
  error_code: T.String({ description: "the error's type (`timeout`, `ValueError`, …); '' on success" }),
  error: T.String({ description: "the error text; '' on success" }),
  trigger_type: T.String(),
  trace_id: T.String({ description: "'' while executions carry no trace id" }),
})

export const ExecutionLogPage = T.Object({
  items: T.Array(ExecutionLogEntry),
  total: T.Integer({ description: 'entries matching the filters' }),
})
