import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node'
import type { Logger } from '../src/kernel/log.ts'
import { REQUEST_LOG_RECORDS_HEADER } from '../src/platform/nats-names.ts'
import type { RequestLogRecord } from '../schemas/analytics.ts'

/*
 * The request log at the edge (ANALYTICS_HOST set). The gateway has no database: it keeps the
 * records of finished requests in memory and publishes them in batches — every `intervalMs` or
 * at `maxRecords`, whichever comes first — as one core NATS message on `analytics.requests`
 * (src/platform/nats-names.ts). The analytics writer of a resources process takes each batch
 * (queue group) and inserts it into ClickHouse (src/analytics/). Nothing here waits: a publish
 * is a write into the connection's buffer, and with no subscriber the batch is simply gone (core
 * NATS, at most once), which is the price of never slowing a request for its log line.
 *
 * A batch is JSONEachRow text — one record per line, already in the table's row shape — so the
 * writer hands the bytes to ClickHouse without parsing and re-serialising them: that round trip
 * was most of the request log's cost per request (bench/gateway.bench.ts).
 */

/** What a request's handler fills in as it learns it; `begin` makes it only when logging is on. */
export interface RequestLogFields {
  /** The route template (`/api/v1/agents/{namespace}/{name}`), '' when no route matched. */
  route: string
  userId: string
  namespace: string
  bytesIn: number
  bytesOut: number
  clientIp: string
  traceId: string
}

/** The trace id of a W3C `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`), '' when absent or malformed. */
export function traceIdOf(traceparent: string): string {
  if (traceparent.length < 55) return ''
  const id = traceparent.slice(3, 35).toLowerCase()
  return traceparent[2] === '-' && /^[0-9a-f]{32}$/.test(id) && id !== '0'.repeat(32) ? id : ''
}

/** A record without its two time columns, which the sink adds. */
export type RequestLogEntry = Omit<RequestLogRecord, 'ts' | 'ts_ms'>

/** The most bytes a batch holds (records are at most a few KB: a URL is bounded by uWS). */
const BATCH_BYTES = 512 * 1024

export interface RequestLogSink {
  add(entry: RequestLogEntry): void
  /** Publishes what is held now (shutdown). */
  flush(): void
  close(): void
  /** Records handed to NATS since start (tests sequence on it). */
  readonly published: number
}

export function requestLogBatcher(
  nc: NatsConnection,
  subject: string,
  log: Logger,
  options: { maxRecords?: number; intervalMs?: number } = {},
): RequestLogSink {
  const max = options.maxRecords ?? 500
  const intervalMs = options.intervalMs ?? 1000
  // lines are written into one buffer per batch as they come (no string of the whole batch to
  // build and encode at publish time); a batch is far below NATS's 1 MB payload limit
  let buf = Buffer.allocUnsafe(BATCH_BYTES)
  let used = 0
  let count = 0
  let timer: NodeJS.Timeout | undefined
  let published = 0
  // the `YYYY-MM-DD hh:mm:ss` of the current second, made once per second
  let second = -1
  let secondText = ''
  const flush = (): void => {
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
    if (count === 0) return
    const batch = buf.subarray(0, used)
    const records = count
    buf = Buffer.allocUnsafe(BATCH_BYTES)
    used = 0
    count = 0
    try {
      const h = natsHeaders()
      h.set(REQUEST_LOG_RECORDS_HEADER, String(records))
      nc.publish(subject, batch, { headers: h })
      published += records
    } catch (err) {
      // a closed connection (shutdown): the batch is lost, the requests it describes are not
      log.warn({ err, records }, 'request log batch not published')
    }
  }
  return {
    add(entry) {
      const ms = Date.now()
      const s = Math.floor(ms / 1000)
      if (s !== second) {
        second = s
        secondText = new Date(s * 1000).toISOString().slice(0, 19).replace('T', ' ')
      }
      // the two time columns first, then the entry's fields: the row shape of `request_logs`
      const line = `{"ts":"${secondText}","ts_ms":${String(ms)},${JSON.stringify(entry).slice(1)}\n`
      // at most 3 bytes per UTF-16 unit: a line that might not fit goes in the next batch
      if (used + line.length * 3 > BATCH_BYTES) flush()
      used += buf.write(line, used, 'utf8')
      count++
      if (count >= max) flush()
      else if (timer === undefined) {
        timer = setTimeout(flush, intervalMs)
        timer.unref()
      }
    },
    flush,
    close: flush,
    get published() {
      return published
    },
  }
}
