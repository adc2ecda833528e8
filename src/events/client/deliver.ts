import type { JsMsg } from '@nats-io/jetstream'
import type { Logger } from '../../kernel/log.ts'
import type { DedupeStore } from './dedupe.ts'
import { parseExecutionEvent, type ExecutionEvent } from './event.ts'

/*
 * One delivery of an event, start to end: check the payload, look its key up in the de-dup store,
 * call the handler, record the key, acknowledge — in that order, so a crash anywhere leads to a
 * redelivery and never to a loss. A failure naks with the backoff of its attempt; the last allowed
 * attempt terminates the event. An invalid payload is terminated at once (another try cannot fix
 * it), one of another schema version is acknowledged unseen.
 */

/** What the handler learns about a delivery besides the event. */
export interface EventMeta {
  /** The EVENTS stream sequence: a position to replay from (`start: { sequence }`). */
  streamSequence: number
  subject: string
  /** When the event entered the stream. */
  publishedAt: Date
  /** 1 on the first delivery; more after a handler failure, an expired ack wait or a restart. */
  deliveryCount: number
  /** The event's de-dup key (`dedupeKey`); a handler recording it with its effect is exactly once. */
  dedupeKey: string
  durable: string
}

export type EventHandler = (event: ExecutionEvent, meta: EventMeta) => Promise<void>

export type ErrorReport = (err: unknown, info: { event?: ExecutionEvent; meta?: EventMeta; gaveUp: boolean }) => void

export interface SubscriptionStats {
  handled: number
  duplicates: number
  failed: number
  invalid: number
  otherSchema: number
}

export interface DeliveryOptions {
  durable: string
  handler: EventHandler
  dedupe: DedupeStore | undefined
  keyOf: (event: ExecutionEvent) => string
  ackWaitMs: number
  backoff: readonly number[]
  maxAttempts: number
  onError?: ErrorReport
  log: Logger
}

export function eventDelivery(o: DeliveryOptions): {
  handle(m: JsMsg): Promise<void>
  stats(): SubscriptionStats
} {
  const { log, dedupe } = o
  const stats: SubscriptionStats = { handled: 0, duplicates: 0, failed: 0, invalid: 0, otherSchema: 0 }
  const inFlightKeys = new Set<string>()
  const report: ErrorReport = (err, info) => {
    try {
      o.onError?.(err, info)
    } catch (e) {
      log.error({ err: e }, 'onError threw')
    }
  }
  const retryDelay = (attempt: number): number => o.backoff[Math.min(attempt, o.backoff.length) - 1] as number

  const handle = async (m: JsMsg): Promise<void> => {
    const parsed = parseExecutionEvent(m.data)
    if (parsed.kind === 'other-schema') {
      stats.otherSchema++
      m.ack()
      return
    }
    if (parsed.kind === 'invalid') {
      stats.invalid++
      const err = new Error(`event ${String(m.seq)} on ${m.subject} is not a valid execution event: ${parsed.reason}`)
      log.error({ seq: m.seq, subject: m.subject }, err.message)
      report(err, { gaveUp: true })
      // no reason with the term: nats-server 2.9 takes only a bare `+TERM` (the reason is logged above)
      m.term()
      return
    }
    const event = parsed.event
    const meta: EventMeta = {
      streamSequence: m.seq,
      subject: m.subject,
      publishedAt: m.time,
      deliveryCount: m.info.deliveryCount,
      dedupeKey: o.keyOf(event),
      durable: o.durable,
    }
    // two copies of one event at once (a redelivery overtaking a slow handler): the second waits
    if (inFlightKeys.has(meta.dedupeKey)) {
      m.nak(retryDelay(1))
      return
    }
    inFlightKeys.add(meta.dedupeKey)
    // the ack wait is renewed while the handler runs, so a slow handler is not raced by a redelivery
    const keepAlive = setInterval(() => m.working(), Math.max(200, Math.floor(o.ackWaitMs / 3)))
    try {
      if (dedupe !== undefined && (await dedupe.has(meta.dedupeKey))) {
        stats.duplicates++
        m.ack()
        return
      }
      await o.handler(event, meta)
    } catch (err) {
      stats.failed++
      const gaveUp = meta.deliveryCount >= o.maxAttempts
      log.warn(
        { err, seq: m.seq, execution: event.execution_id, status: event.status, attempt: meta.deliveryCount, gaveUp },
        gaveUp
          ? 'handling an event failed for the last time: the event is given up'
          : 'handling an event failed (the handler or the de-dup lookup); redelivery after a backoff',
      )
      report(err, { event, meta, gaveUp })
      if (gaveUp) m.term()
      else m.nak(retryDelay(meta.deliveryCount))
      return
    } finally {
      clearInterval(keepAlive)
      inFlightKeys.delete(meta.dedupeKey)
    }
    // the effect is done: a failure from here on costs a duplicate on redelivery, never a loss
    try {
      await dedupe?.add?.(meta.dedupeKey)
    } catch (err) {
      log.warn({ err, key: meta.dedupeKey }, 'recording a handled event failed: a redelivery of it would run again')
    }
    stats.handled++
    m.ack()
  }

  return { handle, stats: () => ({ ...stats }) }
}
