import { AckPolicy, DeliverPolicy, type JsMsg } from '@nats-io/jetstream'
import { headers } from '@nats-io/transport-node'
import { isApiNotFound, publishDurably } from '../../src/platform/jetstream.ts'
import type { Delivery, HostEnv, KeyActor, PartitionRun, Queued } from './partition.ts'
import { decodeEnvelope } from './protocol.ts'
import type { ActorContext } from './define-actor.ts'
import { FRESH_KEY_HEADER } from './send.ts'
import { loadKey, runTurn, runTurns, startKey, type TurnsOutcome } from './state.ts'

/*
 * A partition's mailbox: one durable pull consumer on the work-queue stream ACTORS, consumed only
 * by the partition's owner. Each message goes into its key's inbox, drained on the key's serial chain
 * (one handler at a time per key, consecutive messages of a key in one batch with one state write),
 * per key, many keys at once) and is acked only after the state it produced is written. A message
 * that fails 10 deliveries, or does not match the protocol, goes to `dlq.actor.<type>.<key>` and
 * is terminated.
 */
export const MAX_DELIVERIES = 10
export const IN_PLACE_RETRIES = 3

export const consumerName = (type: string, p: number): string => `${type}-p${String(p).padStart(3, '0')}`

/**
 * A fresh mailbox consumer at every acquisition. ACTORS is a work-queue stream, so what is left of
 * the partition is exactly what nobody acked; a new consumer (DeliverPolicy.All) delivers it in
 * stream order, i.e. each key's messages in the order sent. Reusing the old consumer was not safe:
 * the pull requests of a killed owner stay registered on the server (until they expire), keep
 * receiving messages — redeliveries included — that nobody reads, and those come back only after
 * another ack_wait, while the new owner already handles the same keys' newer messages.
 */
export async function replaceMailboxConsumer(env: HostEnv, type: string, p: number): Promise<void> {
  const durable = consumerName(type, p)
  const stream = env.names.stream('ACTORS')
  await env.jsm.consumers.delete(stream, durable).catch((err: unknown) => {
    if (!isApiNotFound(err)) throw err
  })
  await env.jsm.consumers.add(stream, {
    durable_name: durable,
    filter_subject: env.names.subject(`actor.${type}.${String(p)}.*`),
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    max_deliver: -1,
    ack_wait: env.ackWaitMs * 1e6,
    max_ack_pending: 256,
  })
}

/** A delivery's ack subject (the reply subject, which the client's `JsMsg` type does not list). */
const ackSubjectOf = (m: JsMsg): string | undefined => {
  const reply = (m as { reply?: unknown }).reply
  return typeof reply === 'string' && reply !== '' ? reply : undefined
}

/** Consumes the partition's mailbox until the run stops (its `messages` are closed). */
export async function consumeMailbox(env: HostEnv, run: PartitionRun): Promise<void> {
  if (run.stopping) return
  const consumer = await env.js.consumers.get(env.names.stream('ACTORS'), consumerName(run.def.protocol.type, run.p))
  // the consumer's info as `get` fetched it: nothing pending means nothing sent earlier can be overtaken
  run.caughtUp = (await consumer.info(true)).num_pending === 0
  const messages = await consumer.consume({ max_messages: 64 })
  run.messages = messages
  for await (const m of messages) {
    run.lastAckSubject = ackSubjectOf(m)
    if (m.info.pending === 0) run.caughtUp = true
    await onMailboxMessage(env, run, m)
  }
}

export async function moveToDlq(env: HostEnv, type: string, key: string, m: JsMsg, reason: string): Promise<void> {
  const h = headers()
  h.set('X-Error', reason.slice(0, 1000).replace(/[\r\n]+/g, ' '))
  h.set('X-Attempts', String(m.info.deliveryCount))
  h.set('X-Orig-Subject', m.subject)
  await publishDurably(env.js, env.names.subject(`dlq.actor.${type}.${key}`), m.data, {
    msgID: `dlq-${m.info.stream}-${String(m.seq)}`,
    headers: h,
  })
  m.term()
  env.log.warn({ type, key, reason }, 'actor message moved to the dead letter queue')
}

/**
 * Checks a delivered message and queues its turn on the key's chain. A loaded key costs no await
 * (the consume loop goes on to the next message at once); a key seen for the first time is loaded
 * off the loop, and its messages arriving meanwhile are queued behind the load, in order.
 */
export async function onMailboxMessage(env: HostEnv, run: PartitionRun, m: JsMsg): Promise<void> {
  const type = run.def.protocol.type
  const key = m.subject.slice(m.subject.lastIndexOf('.') + 1)
  if (run.stopping) {
    m.nak()
    return
  }
  const decoded = decodeEnvelope(run.def.protocol, m.data)
  if (!decoded.ok) {
    await moveToDlq(env, type, key, m, decoded.reason)
    return
  }
  if (m.info.deliveryCount > MAX_DELIVERIES) {
    await moveToDlq(env, type, key, m, `failed ${String(MAX_DELIVERIES)} deliveries`)
    return
  }
  queueForKey(
    env,
    run,
    key,
    { m, name: decoded.name, payload: decoded.payload },
    m.info.deliveryCount === 1 && m.headers?.get(FRESH_KEY_HEADER) === '1',
  )
}

/**
 * Queues a checked message on its key's chain: at once for a loaded key, behind the load for a key
 * being loaded or seen for the first time. `fresh`: the key is one its sender has just made, so
 * nothing is read (only on a first delivery: a redelivery may follow a failed write, whose key is
 * then read like any other).
 */
export function queueForKey(env: HostEnv, run: PartitionRun, key: string, q: Queued, fresh: boolean): void {
  const type = run.def.protocol.type
  // a load in progress first: the key may be in `keys` already while messages queued behind the
  // load wait to be enqueued — this one must not overtake them
  let loading = run.loading.get(key)
  if (loading === undefined) {
    const a = run.keys.get(key)
    if (a !== undefined) {
      enqueue(env, run, key, a, q)
      return
    }
    if (fresh) {
      enqueue(env, run, key, startKey(run, key, null, 0), q)
      return
    }
    const started = loadKey(env, run, key)
    loading = started
    run.loading.set(key, started)
    // registered first, so it runs just before the queued messages are enqueued, in one go
    started.then(
      () => forgetLoad(run, key, started),
      () => forgetLoad(run, key, started),
    )
  }
  // then-callbacks run in the order they were registered: the key's messages stay in order
  loading.then(
    (loaded) => enqueue(env, run, key, loaded, q),
    (err: unknown) => {
      env.log.warn({ err, type, key }, 'actor state could not be loaded; the message is redelivered after ack_wait')
      // a told message has no ack_wait to come back after: it goes to the mailbox now
      if (q.m.info === undefined) q.m.nak()
    },
  )
}

function forgetLoad(run: PartitionRun, key: string, load: Promise<KeyActor>): void {
  if (run.loading.get(key) === load) run.loading.delete(key)
}

function enqueue(env: HostEnv, run: PartitionRun, key: string, a: KeyActor, q: Queued): void {
  a.pending++
  a.inbox.push(q)
  scheduleDrain(env, run, key, a)
}

/** At most this many of a key's waiting messages share one state write. */
export const MAX_BATCH = 64

/** Queues a drain of the key's inbox on its serial chain, unless one is queued already. */
function scheduleDrain(env: HostEnv, run: PartitionRun, key: string, a: KeyActor): void {
  if (a.drainQueued) return
  a.drainQueued = true
  a.chain = a.chain.then(() => drainInbox(env, run, key, a))
}

/**
 * Handles what waits in a key's inbox as one batch: the handlers run in order on one in-memory
 * state, the state is written once, then every message of the batch is acked (state before ack,
 * as for a single message). Messages that arrive meanwhile wait for the next drain. A handler that
 * fails ends the batch: what ran before it is committed and acked, it is retried in place (the
 * key's later messages wait behind it), and the rest go back to the front of the inbox.
 */
export async function drainInbox(env: HostEnv, run: PartitionRun, key: string, a: KeyActor): Promise<void> {
  a.drainQueued = false
  const batch = a.inbox.splice(0, MAX_BATCH)
  if (a.inbox.length > 0) scheduleDrain(env, run, key, a)
  let finished = 0
  try {
    // stopping, or the key was dropped after a CAS conflict (ownership moved): the owner gets them again
    if (run.stopping || run.keys.get(key) !== a) {
      for (const q of batch) q.m.nak()
      finished = batch.length
      return
    }
    let out: TurnsOutcome
    try {
      out = await runTurns(
        env,
        run,
        key,
        batch.map((q) => (ctx: ActorContext<unknown>) => run.def.handle(ctx, q.name, q.payload)),
        () => {
          for (const q of batch) q.m.working()
        },
      )
    } catch (err) {
      // the state write failed without an answer (timeout, connection lost): its outcome is
      // unknown, the key was dropped (reloaded with its next message) and the batch is redelivered
      env.log.warn({ err, type: run.def.protocol.type, key }, 'actor state write failed; batch handed back')
      for (const q of batch) q.m.nak()
      finished = batch.length
      return
    }
    for (const q of batch.slice(0, out.ran)) {
      if (out.committed) env.out.ack(q.m)
      else q.m.nak()
    }
    finished = out.ran
    if (!out.committed || !out.failed) {
      // ownership moved (the rest is redelivered to the new owner) or the partition is stopping
      for (const q of batch.slice(out.ran)) q.m.nak()
      finished = batch.length
      return
    }
    const failed = batch[out.ran] as Queued
    await handleWithRetries(env, run, key, failed.m, failed.name, failed.payload, 1, out.error)
    finished++
    const rest = batch.slice(out.ran + 1)
    if (rest.length > 0) {
      a.inbox.unshift(...rest)
      scheduleDrain(env, run, key, a)
    }
  } finally {
    a.pending -= finished
  }
}

/**
 * A failing handler is retried in place first, so the key's later messages wait behind it (per-key
 * order); only then is the message handed back, counting toward the DLQ.
 */
export async function handleWithRetries(
  env: HostEnv,
  run: PartitionRun,
  key: string,
  m: Delivery,
  name: string,
  payload: unknown,
  firstAttempt = 0,
  firstErr?: unknown,
): Promise<void> {
  let lastErr: unknown = firstErr
  for (let attempt = firstAttempt; attempt < IN_PLACE_RETRIES; attempt++) {
    if (attempt > 0) {
      if (run.stopping) break
      await new Promise((r) => setTimeout(r, 50 * 2 ** (attempt - 1)))
    }
    try {
      const ok = await runTurn(
        env,
        run,
        key,
        (ctx) => run.def.handle(ctx, name, payload),
        () => m.working(),
      )
      if (ok) env.out.ack(m)
      else m.nak()
      return
    } catch (err) {
      lastErr = err
      if (run.stopping) break
    }
  }
  env.log.warn(
    { err: lastErr, type: run.def.protocol.type, key, delivery: m.info?.deliveryCount ?? 'told' },
    'actor handler failed; message handed back for redelivery',
  )
  m.nak(500)
}
