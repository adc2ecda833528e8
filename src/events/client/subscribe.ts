import { join } from 'node:path'
import { jetstream } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import { createLogger, type Logger } from '../../kernel/log.ts'
import { natsNames } from '../../platform/nats-names.ts'
import { connectEvents, type NatsCredentials } from './connect.ts'
import type { DedupeStore } from './dedupe.ts'
import { ensureDurable, eventsStream, type StartAt } from './durable.ts'
import { eventDelivery, type ErrorReport, type EventHandler, type SubscriptionStats } from './deliver.ts'
import { executionEventKey, type ExecutionEvent } from './event.ts'
import { fileDedupe } from './file-dedupe.ts'

export type { ErrorReport, EventHandler, EventMeta, SubscriptionStats } from './deliver.ts'

/*
 * A backend service's subscription to the execution events: a durable pull consumer on EVENTS
 * (durable.ts), explicit acks, at least once; what happens to each delivery is deliver.ts. Here:
 * the options, the connection, the fetch loop with at most `concurrency` handlers at once, and a
 * stop that drains. Guide: docs/events-client.md.
 */

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
  /** Default: `fileDedupe('.events-client/<durable>.keys')` (from the working directory). `false`: none (every delivery reaches the handler). */
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
  onError?: ErrorReport
  logger?: Logger
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
  let ownStore = false
  try {
    await ensureDurable(
      nc,
      names,
      { durable: o.durable, filter: o.filter ?? '>', start: o.start ?? 'new', ackWaitMs, maxAckPending },
      log,
    )
    dedupe = o.dedupe === false ? undefined : (o.dedupe ?? fileDedupe(join('.events-client', `${o.durable}.keys`)))
    ownStore = o.dedupe === undefined
    const consumer = await jetstream(nc).consumers.get(eventsStream(names), o.durable)
    // a small buffer: a pulled event's ack wait runs while it waits for its turn
    messages = await consumer.consume({
      max_messages: Math.min(maxAckPending, concurrency * 2),
      abort_on_missing_resource: true,
    })
  } catch (err) {
    if (ownStore) await dedupe?.close?.().catch(() => undefined)
    if (owned) await nc.close().catch(() => undefined)
    throw err
  }

  if (owned)
    void (async () => {
      for await (const s of nc.status())
        if (s.type === 'disconnect' || s.type === 'reconnect') log.warn({ nats: s.type }, 'nats connection status')
        else if (s.type === 'error') log.warn({ err: s.error }, 'nats error')
    })()

  let stopping = false
  const delivery = eventDelivery({
    durable: o.durable,
    handler: o.handler,
    dedupe,
    keyOf,
    ackWaitMs,
    backoff,
    maxAttempts,
    ...(o.onError === undefined ? {} : { onError: o.onError }),
    log,
  })

  const loop = (async (): Promise<Error | undefined> => {
    const running = new Set<Promise<void>>()
    for await (const m of messages) {
      if (stopping) {
        // fetched but not started: back to the stream at once, for whoever consumes next
        m.nak()
        continue
      }
      const p = delivery
        .handle(m)
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
    stats: delivery.stats,
  }
}
