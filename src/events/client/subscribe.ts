import { jetstream, type JsMsg } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import { createLogger, type Logger } from '../../kernel/log.ts'
import { natsNames } from '../../platform/nats-names.ts'
import { connectEvents, type NatsCredentials } from './connect.ts'
import type { DedupeStore } from './dedupe.ts'
import { ensureDurable, eventsStream, type StartAt } from './durable.ts'
import { executionEventKey, parseExecutionEvent, type ExecutionEvent } from './event.ts'
import { kvDedupe } from './kv-dedupe.ts'

/*
 * A backend service's subscription to the execution events: a durable pull consumer on EVENTS,
 * explicit acks, at least once. Each event is checked against its schema, looked up in the de-dup
 * store, handed to the handler, recorded as handled and acknowledged — in that order, so a crash
 * at any point leads to a redelivery, never a loss. A handler that throws gets the event again
 * after a backoff. Guide: docs/events-client.md.
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

export interface SubscribeOptions {
  /** NATS servers: a URL, a comma-separated list or an array. Not with `connection`. */
  servers?: string | readonly string[]
  credentials?: NatsCredentials
  /** A connection the service already has (not closed by `stop()`); instead of `servers`. */
  connection?: NatsConnection
  /** The platform's NATS_PREFIX ('' = none). */
  prefix?: string
  /** The durable consumer's name: the service's place in the stream, kept across restarts. */
  durable: string
  /** Which events, after `events.execution.`: `<namespace>.<name>.<status>`, `*` one token, `>` the rest. Default `>`. */
  filter?: string
  /** Where a new durable starts (ignored when it exists: see resetDurable). Default 'new'. */
  start?: StartAt
  /** Default: the NATS KV store (kvDedupe). `false`: none (every delivery reaches the handler). */
  dedupe?: DedupeStore | false
  /** The de-dup key of an event. Default `<execution_id>.<revision>` (executionEventKey). */
  dedupeKey?: (event: ExecutionEvent) => string
  handler: EventHandler
  /** Handler calls at once. Default 1: events are handled in stream order (but for redeliveries). */
  concurrency?: number
  /** Events delivered and not yet acknowledged, at most (the consumer's max_ack_pending). Default 1000. */
  maxAckPending?: number
  /** How long a delivery may go unacknowledged before it is sent again; renewed while the handler runs. Default 30 s. */
  ackWaitMs?: number
  /** The wait before a failed event is delivered again, by attempt (the last one repeats). Default 1 s, 5 s, 15 s, 30 s, 60 s. */
  backoffMs?: readonly number[]
  /** Give an event up after this many failed handler calls (terminated, reported to onError). Default: never. */
  maxAttempts?: number
  /** A handler failure, an invalid payload, an event given up. Logged either way. */
  onError?: (err: unknown, info: { event?: ExecutionEvent; meta?: EventMeta; gaveUp: boolean }) => void
  logger?: Logger
}

export interface SubscriptionStats {
  handled: number
  duplicates: number
  failed: number
  invalid: number
  otherSchema: number
}

export interface ExecutionEventSubscription {
  readonly durable: string
  /** Stops fetching, lets the handlers in flight finish and acknowledge, then closes what it opened. */
  stop(): Promise<void>
  /** Settles when the subscription ends: undefined after stop(), the error when it ended by itself (its durable deleted). */
  readonly closed: Promise<Error | undefined>
  stats(): SubscriptionStats
}

const DEFAULT_BACKOFF_MS = [1_000, 5_000, 15_000, 30_000, 60_000] as const

export async function subscribeExecutionEvents(o: SubscribeOptions): Promise<ExecutionEventSubscription> {
  const log = (o.logger ?? createLogger({ svc: 'events-client' })).child({ durable: o.durable })
  const names = natsNames(o.prefix ?? '')
  const concurrency = o.concurrency ?? 1
  const maxAckPending = o.maxAckPending ?? 1_000
  const ackWaitMs = o.ackWaitMs ?? 30_000
  const backoff = o.backoffMs ?? DEFAULT_BACKOFF_MS
  const maxAttempts = o.maxAttempts ?? Number.POSITIVE_INFINITY
  const keyOf = o.dedupeKey ?? executionEventKey
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error('concurrency must be an integer ≥ 1')
  if (maxAckPending < concurrency) throw new Error('maxAckPending must be at least concurrency')
  if (backoff.length === 0) throw new Error('backoffMs needs at least one delay')
  if ((o.connection === undefined) === (o.servers === undefined))
    throw new Error('give either servers (and credentials) or a connection')

  const owned = o.connection === undefined
  const nc = o.connection ?? (await connectEvents(o.servers ?? '', o.credentials, `events-client ${o.durable}`))
  let messages
  let dedupe: DedupeStore | undefined
  try {
    await ensureDurable(
      nc,
      names,
      { durable: o.durable, filter: o.filter ?? '>', start: o.start ?? 'new', ackWaitMs, maxAckPending },
      log,
    )
    dedupe = o.dedupe === false ? undefined : (o.dedupe ?? (await kvDedupe(nc, names, o.durable)))
    const consumer = await jetstream(nc).consumers.get(eventsStream(names), o.durable)
    // a small buffer: a pulled event's ack wait runs while it waits for its turn
    messages = await consumer.consume({
      max_messages: Math.min(maxAckPending, concurrency * 2),
      abort_on_missing_resource: true,
    })
  } catch (err) {
    if (owned) await nc.close().catch(() => undefined)
    throw err
  }

  if (owned)
    void (async () => {
      for await (const s of nc.status())
        if (s.type === 'disconnect' || s.type === 'reconnect') log.warn({ nats: s.type }, 'nats connection status')
        else if (s.type === 'error') log.warn({ err: s.error }, 'nats error')
    })()

  const stats: SubscriptionStats = { handled: 0, duplicates: 0, failed: 0, invalid: 0, otherSchema: 0 }
  const inFlightKeys = new Set<string>()
  let stopping = false
  const report = (err: unknown, info: { event?: ExecutionEvent; meta?: EventMeta; gaveUp: boolean }) => {
    try {
      o.onError?.(err, info)
    } catch (e) {
      log.error({ err: e }, 'onError threw')
    }
  }
  const retryDelay = (attempt: number): number => backoff[Math.min(attempt, backoff.length) - 1] as number

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
      dedupeKey: keyOf(event),
      durable: o.durable,
    }
    // two copies of one event at once (a redelivery overtaking a slow handler): the second waits
    if (inFlightKeys.has(meta.dedupeKey)) {
      m.nak(retryDelay(1))
      return
    }
    inFlightKeys.add(meta.dedupeKey)
    // the ack wait is renewed while the handler runs, so a slow handler is not raced by a redelivery
    const keepAlive = setInterval(() => m.working(), Math.max(200, Math.floor(ackWaitMs / 3)))
    try {
      if (dedupe !== undefined && (await dedupe.has(meta.dedupeKey))) {
        stats.duplicates++
        m.ack()
        return
      }
      await o.handler(event, meta)
    } catch (err) {
      stats.failed++
      const gaveUp = meta.deliveryCount >= maxAttempts
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

  const loop = (async (): Promise<Error | undefined> => {
    const running = new Set<Promise<void>>()
    for await (const m of messages) {
      if (stopping) {
        // fetched but not started: back to the stream at once, for whoever consumes next
        m.nak()
        continue
      }
      const p = handle(m)
        .catch((err: unknown) => log.error({ err, seq: m.seq }, 'handling an event failed'))
        .finally(() => running.delete(p))
      running.add(p)
      if (running.size >= concurrency) await Promise.race(running)
    }
    await Promise.all(running)
    const ended = await messages.closed()
    return ended instanceof Error ? ended : undefined
  })()
  const closed = loop.then(
    (err) => {
      if (err !== undefined && !stopping) log.error({ err }, 'the events subscription ended')
      return err
    },
    (err: unknown) => (err instanceof Error ? err : new Error(String(err))),
  )
  // Stopping from the outside, or ended by itself (the durable deleted): the store and the
  // connection this client opened are closed either way.
  const finished = closed.then(async (err) => {
    await dedupe?.close?.().catch((e: unknown) => log.warn({ err: e }, 'closing the de-dup store failed'))
    if (owned) await nc.drain().catch(() => undefined)
    return err
  })

  log.info({ filter: o.filter ?? '>', concurrency, maxAckPending }, 'events subscription started')
  return {
    durable: o.durable,
    async stop() {
      if (!stopping) {
        stopping = true
        await messages.close()
      }
      await finished
    },
    closed: finished.then((err) => (stopping ? undefined : err)),
    stats: () => ({ ...stats }),
  }
}
