import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  jetstreamManager,
  type ConsumerConfig,
  type ConsumerInfo,
} from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import type { Logger } from '../../kernel/log.ts'
import type { NatsNames } from '../../platform/nats-names.ts'

/*
 * The durable pull consumer on EVENTS that a backend service reads through: created on the first
 * subscribe with the start position asked for, reused as it is afterwards (its position is the
 * point: a restarted service goes on where it stopped). Moving it elsewhere is a reset — delete
 * it, and the next subscribe creates it at its `start` again.
 */

/** Where a new durable starts: the first event at or after a time, at a stream sequence, every event the stream holds (24 h), or only those published from now on. */
export type StartAt = 'new' | 'all' | { time: Date | string } | { sequence: number }

export const DURABLE_PATTERN = /^[A-Za-z0-9_-]{1,64}$/
/** A subject filter after `events.execution.`: `<namespace>.<name>.<status>` tokens or `*`, optionally ending with `>` (as the SSE tail's). */
export const FILTER_PATTERN = /^(>|([A-Za-z0-9_-]+|\*)(\.([A-Za-z0-9_-]+|\*)){0,2}(\.>)?)$/

export interface DurableSpec {
  durable: string
  filter: string
  start: StartAt
  ackWaitMs: number
  maxAckPending: number
}

export const eventsStream = (names: NatsNames): string => names.stream('EVENTS')
export const filterSubject = (names: NatsNames, filter: string): string => names.subject(`events.execution.${filter}`)

function startConfig(start: StartAt): Partial<ConsumerConfig> {
  if (start === 'new') return { deliver_policy: DeliverPolicy.New }
  if (start === 'all') return { deliver_policy: DeliverPolicy.All }
  if ('sequence' in start) {
    if (!Number.isInteger(start.sequence) || start.sequence < 1)
      throw new Error(`start.sequence must be a stream sequence (an integer ≥ 1), got ${String(start.sequence)}`)
    return { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: start.sequence }
  }
  const time = start.time instanceof Date ? start.time : new Date(start.time)
  if (Number.isNaN(time.getTime())) throw new Error(`start.time is not a time: ${String(start.time)}`)
  return { deliver_policy: DeliverPolicy.StartTime, opt_start_time: time.toISOString() }
}

const isNotFound = (err: unknown): boolean =>
  err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound

export function checkSpec(spec: Pick<DurableSpec, 'durable' | 'filter'>): void {
  if (!DURABLE_PATTERN.test(spec.durable))
    throw new Error(`durable must be 1-64 letters, digits, - or _ (got ${JSON.stringify(spec.durable)})`)
  if (!FILTER_PATTERN.test(spec.filter))
    throw new Error(
      `filter must be <namespace>.<name>.<status> tokens, * or a final > (got ${JSON.stringify(spec.filter)})`,
    )
}

/**
 * The durable, created at `spec.start` when missing. An existing one keeps its position (`start`
 * is not applied: log says so); its bounds (ack wait, max ack pending) are brought to the spec.
 * One that follows another filter, or is not an explicit-ack pull consumer, is refused: it is
 * another consumer's, or needs a reset.
 */
export async function ensureDurable(
  nc: NatsConnection,
  names: NatsNames,
  spec: DurableSpec,
  log: Logger,
): Promise<ConsumerInfo> {
  checkSpec(spec)
  const jsm = await jetstreamManager(nc)
  const stream = eventsStream(names)
  const subject = filterSubject(names, spec.filter)
  const bounds = { ack_wait: spec.ackWaitMs * 1e6, max_ack_pending: spec.maxAckPending }
  const existing = await jsm.consumers.info(stream, spec.durable).catch((err: unknown) => {
    if (isNotFound(err)) return null
    throw err
  })
  if (existing === null) {
    const created = await jsm.consumers.add(stream, {
      durable_name: spec.durable,
      filter_subject: subject,
      ack_policy: AckPolicy.Explicit,
      // attempts are counted by the client (maxAttempts), which naks with its own backoff
      max_deliver: -1,
      ...bounds,
      ...startConfig(spec.start),
    })
    log.info({ durable: spec.durable, filter: subject, start: spec.start }, 'events durable created')
    return created
  }
  const c = existing.config
  if (c.deliver_subject !== undefined && c.deliver_subject !== '')
    throw new Error(`the consumer ${spec.durable} on ${stream} is a push consumer: not one of this client's`)
  if (c.ack_policy !== AckPolicy.Explicit)
    throw new Error(`the consumer ${spec.durable} on ${stream} does not ack explicitly: not one of this client's`)
  if ((c.filter_subject ?? '') !== subject)
    throw new Error(
      `the durable ${spec.durable} follows ${c.filter_subject ?? '(everything)'}, not ${subject}: reset it (resetDurable) to change its filter`,
    )
  log.info(
    { durable: spec.durable, delivered: existing.delivered.stream_seq, pending: existing.num_pending },
    'events durable exists: it goes on from its position (start applies only when it is created)',
  )
  if (c.ack_wait !== bounds.ack_wait || c.max_ack_pending !== bounds.max_ack_pending)
    return jsm.consumers.update(stream, spec.durable, bounds)
  return existing
}

/** Deletes the durable (true when there was one): the next subscribe creates it at its `start`. */
export async function deleteDurable(nc: NatsConnection, names: NatsNames, durable: string): Promise<boolean> {
  checkSpec({ durable, filter: '>' })
  const jsm = await jetstreamManager(nc)
  return jsm.consumers.delete(eventsStream(names), durable).catch((err: unknown) => {
    if (isNotFound(err)) return false
    throw err
  })
}
