import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { NatsConnection, Subscription } from '@nats-io/transport-node'
import { ExecutionEvent } from '../../schemas/job.ts'
import type { ExecutionLogRecord } from '../../schemas/analytics.ts'
import type { Logger } from '../kernel/log.ts'
import { REQUEST_LOG_RECORDS_HEADER, requestLogSubject, type NatsNames } from '../platform/nats-names.ts'
import { EXECUTION_LOGS, REQUEST_LOGS } from './tables.ts'
import type { AnalyticsWriter } from './writer.ts'

/*
 * What feeds the analytics writer, both core NATS subscriptions in the queue group `analytics`
 * (one resources process takes each message, whichever replicas run):
 * - the gateways' request-log batches on `analytics.requests` (gateway/request-log.ts): JSONEachRow
 *   text in the table's row shape, kept as bytes and inserted as they are. Parsing, checking and
 *   re-serialising every record here cost about as much as everything else the log does per
 *   request; only the gateway and platform NATS users may publish on that subject, and ClickHouse
 *   itself refuses what is not a row (the writer then drops it and counts it);
 * - the job system's execution events (`events.execution.>`, src/jobs/events.ts), of which only
 *   the final ones (completed, failed, cancelled) become rows: one row per finished execution.
 *   Events are at least once, so a redelivered final event can make a second row of the same
 *   execution (rare; the log is a log, not the record of truth: that is the executions table).
 * A message that is not what it should be is skipped with a warning; nothing here waits.
 */
const checkEvent = TypeCompiler.Compile(ExecutionEvent)
const FINAL = new Set(['completed', 'failed', 'cancelled'])
const QUEUE = 'analytics'

const decoder = new TextDecoder()

/** `2026-12-05 04:41:01` (UTC), how a DateTime('UTC') column reads JSONEachRow text. */
export const chDateTime = (ms: number): string => new Date(ms).toISOString().slice(0, 19).replace('T', ' ')

/** A request-log batch's bytes and record count, or null when it is not framed as one. */
export function requestBatch(data: Uint8Array, recordsHeader: string): { text: Uint8Array; rows: number } | null {
  const rows = Number(recordsHeader)
  if (!Number.isInteger(rows) || rows < 1 || rows > 100_000) return null
  if (data.length < 2 || data[0] !== 0x7b || data[data.length - 1] !== 0x0a) return null
  // a copy: the message's bytes may be a view of the connection's read buffer
  return { text: data.slice(), rows }
}

export function executionRecord(e: ExecutionEvent): ExecutionLogRecord {
  const finished = e.finished_at === null ? Date.now() : Date.parse(e.finished_at)
  return {
    ts: Number.isFinite(finished) ? finished : Date.now(),
    execution_id: e.execution_id,
    kind: e.kind,
    namespace: e.namespace,
    name: e.name,
    pool: e.pool,
    user_id: e.user_id ?? '',
    status: e.status,
    attempt: e.attempt,
    duration_ms: e.duration_ms ?? 0,
    error_code: e.error_code ?? '',
    error: e.error ?? '',
    trigger_type: e.trigger_type,
    // executions carry no trace context yet: the column is there for when they do
    trace_id: '',
  }
}

export const executionRow = (r: ExecutionLogRecord): object => ({ ...r, ts: chDateTime(r.ts), ts_ms: r.ts })

export function subscribeLogFeeds(
  nc: NatsConnection,
  names: NatsNames,
  writer: AnalyticsWriter,
  log: Logger,
): { close(): void } {
  const subs: Subscription[] = [
    nc.subscribe(requestLogSubject(names), {
      queue: QUEUE,
      callback: (err, msg) => {
        if (err !== null) return log.warn({ err }, 'request-log subscription failed')
        const batch = requestBatch(msg.data, msg.headers?.get(REQUEST_LOG_RECORDS_HEADER) ?? '')
        if (batch === null) return log.warn('a request-log batch that is not one: skipped')
        writer.add(REQUEST_LOGS, batch.text, batch.rows)
      },
    }),
    nc.subscribe(names.subject('events.execution.>'), {
      queue: QUEUE,
      callback: (err, msg) => {
        if (err !== null) return log.warn({ err }, 'execution-event subscription failed')
        // the status is the subject's last token: most events (queued, running) are not parsed at all
        const status = msg.subject.slice(msg.subject.lastIndexOf('.') + 1)
        if (!FINAL.has(status)) return
        let event: unknown
        try {
          event = JSON.parse(decoder.decode(msg.data))
        } catch {
          event = null
        }
        if (!checkEvent.Check(event))
          return log.warn({ subject: msg.subject }, 'an execution event of another shape: skipped')
        writer.add(EXECUTION_LOGS, `${JSON.stringify(executionRow(executionRecord(event)))}\n`, 1)
      },
    }),
  ]
  return {
    close() {
      for (const s of subs) s.unsubscribe()
    },
  }
}
