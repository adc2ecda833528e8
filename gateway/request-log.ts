import type { NatsConnection } from '@nats-io/transport-node'
import type { Logger } from '../src/kernel/log.ts'
import type { RequestLogRecord } from '../schemas/analytics.ts'

/*
 * The request log at the edge (ANALYTICS_HOST set). The gateway has no database: it keeps the
 * records of finished requests in memory and publishes them in batches — every `intervalMs` or
 * at `maxRecords`, whichever comes first — as one core NATS message on `analytics.requests`
 * (src/platform/nats-names.ts). The analytics writer of a resources process takes each batch
 * (queue group) and inserts it into ClickHouse (src/analytics/). Nothing here waits: a publish
 * is a write into the connection's buffer, and with no subscriber the batch is simply gone (core
 * NATS, at most once), which is the price of never slowing a request for its log line.
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

export interface RequestLogSink {
  add(record: RequestLogRecord): void
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
  let held: RequestLogRecord[] = []
  let timer: NodeJS.Timeout | undefined
  let published = 0
  const flush = (): void => {
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
    if (held.length === 0) return
    const batch = held
    held = []
    try {
      nc.publish(subject, JSON.stringify(batch))
      published += batch.length
    } catch (err) {
      // a closed connection (shutdown): the batch is lost, the request it describes is not
      log.warn({ err, records: batch.length }, 'request log batch not published')
    }
  }
  return {
    add(record) {
      held.push(record)
      if (held.length >= max) flush()
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
