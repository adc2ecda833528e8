import { AckPolicy, DeliverPolicy, JetStreamApiError, jetstream, jetstreamManager, type ConsumerMessages, type JsMsg } from '@nats-io/jetstream'
import { Kvm, type KV } from '@nats-io/kv'
import { headers } from '@nats-io/transport-node'
import { Value } from '@sinclair/typebox/value'
import type { Logger } from '../../src/kernel/log.ts'
import { isWrongLastSequence } from '../../src/jobs/job-state.ts'
import { publishDurably } from '../../src/jobs/publish.ts'
import { listMembers, startHeartbeat, workersBucket, type Heartbeat } from '../../src/platform/heartbeat.ts'
import type { NatsConnection } from '../../src/platform/nats.ts'
import type { NatsNames } from '../../src/platform/nats-names.ts'
import type { ActorContext, AnyActor } from './define-actor.ts'
import { partitionOf, rendezvousOwner } from './hash.ts'
import { provisionActors } from './provision.ts'

/*
 * An actor host: owns some partitions of every registered actor type and runs their mailboxes.
 *
 * Ownership (research §2.2–2.3): every tick the host lists the live hosts (heartbeats in WORKERS,
 * role `actors`), computes the rendezvous owner of each partition, and for the ones it should own
 * creates a lease key in ACTOR_LEASES (CAS create: one winner), renews it by CAS update, and gives
 * it up by CAS delete when another host should own it (a join) — draining in-flight work first.
 * The bucket TTL is the lease TTL: a dead host's leases vanish after it, and the next owner takes
 * them. A host stops working a partition at `renewal sent + TTL − margin` on its own monotonic
 * clock, before the server could let anyone else in, so two hosts never run one partition.
 *
 * Mailboxes: one durable pull consumer per partition, consumed only by the owner; messages go to a
 * serial chain per key (one handler at a time per key, many keys at once), state is written to
 * ACTOR_STATE by CAS before the message is acked, so a takeover loses nothing: the new owner
 * replaces the partition's consumer, and what nobody acked is delivered again in stream order. A message that fails 10 deliveries, or does
 * not match the actor's schema, goes to `dlq.actor.<type>.<key>` and is terminated.
 */
export interface ActorHostOptions {
  nc: NatsConnection
  names: NatsNames
  nodeId: string
  actors: AnyActor[]
  log: Logger
  leaseTtlMs: number
  /** Lease and membership tick (default TTL / 5); heartbeats go out at the same pace. */
  tickMs?: number
  /** Mailbox redelivery time of an unacked message (default 15 s). */
  ackWaitMs?: number
}

export interface ActorHost {
  nodeId: string
  /** Partitions owned now, as `<type>.<partition>`. */
  owned(): string[]
  stop(): Promise<void>
}

export const MAX_DELIVERIES = 10
const IN_PLACE_RETRIES = 3

interface Stored {
  state: unknown
  timers: Record<string, number>
}

interface KeyActor {
  chain: Promise<void>
  pending: number
  stored: Stored
  rev: number
  lastUsed: number
}

interface Run {
  def: AnyActor
  p: number
  leaseKey: string
  /** Revision of the lease at acquisition: the fencing token. */
  fence: number
  /** Current lease revision, for the next CAS renewal. */
  rev: number
  validUntil: number
  /** Set once consuming starts. */
  messages: ConsumerMessages | undefined
  loop: Promise<void>
  keys: Map<string, KeyActor>
  stopping: boolean
}

const consumerName = (type: string, p: number) => `${type}-p${String(p).padStart(3, '0')}`

export async function startActorHost(o: ActorHostOptions): Promise<ActorHost> {
  const log = o.log.child({ actorHost: o.nodeId })
  const tickMs = o.tickMs ?? Math.max(200, Math.floor(o.leaseTtlMs / 5))
  const ackWaitMs = o.ackWaitMs ?? 15_000
  const margin = Math.max(tickMs, Math.floor(o.leaseTtlMs / 3))
  await provisionActors(o.nc, o.names, { leaseTtlMs: o.leaseTtlMs })
  const js = jetstream(o.nc)
  const jsm = await jetstreamManager(o.nc)
  const kvm = new Kvm(o.nc)
  const leases: KV = await kvm.open(o.names.bucket('ACTOR_LEASES'))
  const states: KV = await kvm.open(o.names.bucket('ACTOR_STATE'))
  const workers = await workersBucket(o.nc, o.names)
  const runs = new Map<string, Run>()
  let stopped = false

  const heartbeat: Heartbeat = startHeartbeat({ kv: workers, role: 'actors', nodeId: o.nodeId, info: () => ({ partitions: runs.size }), log, intervalMs: tickMs })
  await heartbeat.beat()

  const liveHosts = async (): Promise<string[]> => {
    const members = await listMembers(workers, 'actors')
    const now = Date.now()
    const live = members.filter((m) => now - Date.parse(m.last_seen) < 3 * tickMs).map((m) => m.nodeId)
    return live.includes(o.nodeId) ? live : [...live, o.nodeId]
  }

  const toDlq = async (type: string, key: string, m: JsMsg, reason: string) => {
    const h = headers()
    h.set('X-Error', reason.slice(0, 1000).replace(/[\r\n]+/g, ' '))
    h.set('X-Attempts', String(m.info.deliveryCount))
    h.set('X-Orig-Subject', m.subject)
    await publishDurably(js, o.names.subject(`dlq.actor.${type}.${key}`), m.data, { msgID: `dlq-${m.info.stream}-${String(m.seq)}`, headers: h })
    m.term()
    log.warn({ type, key, reason }, 'actor message moved to the dead letter queue')
  }

  const load = async (run: Run, key: string): Promise<KeyActor> => {
    let a = run.keys.get(key)
    if (a === undefined) {
      const e = await states.get(`${run.def.type}.${key}`)
      const exists = e !== null && e.operation === 'PUT' && e.length > 0
      a = {
        chain: Promise.resolve(),
        pending: 0,
        stored: exists ? e.json<Stored>() : { state: run.def.initialState(key), timers: {} },
        rev: exists ? e.revision : 0,
        lastUsed: Date.now(),
      }
      run.keys.set(key, a)
    }
    return a
  }

  /** Runs one turn for a key; returns whether its state was committed. */
  const turn = async (run: Run, key: string, body: (ctx: ActorContext<unknown>) => Promise<void>, keepAlive?: () => void): Promise<boolean> => {
    const a = await load(run, key)
    a.lastUsed = Date.now()
    let next: Stored = { state: a.stored.state, timers: { ...a.stored.timers } }
    let dirty = false
    const ctx: ActorContext<unknown> = {
      key,
      state: a.stored.state,
      setState: (s) => {
        next = { ...next, state: s }
        dirty = true
      },
      setTimer: (name, ms) => {
        next.timers[name] = Date.now() + ms
        dirty = true
      },
      clearTimer: (name) => {
        if (name in next.timers) {
          delete next.timers[name]
          dirty = true
        }
      },
      fence: run.fence,
      log: log.child({ actor: run.def.type, key }),
    }
    const alive = keepAlive === undefined ? undefined : setInterval(keepAlive, Math.max(250, Math.floor(ackWaitMs / 3)))
    try {
      await body(ctx)
    } finally {
      if (alive !== undefined) clearInterval(alive)
    }
    if (!dirty) return true
    const stateKey = `${run.def.type}.${key}`
    try {
      a.rev = a.rev === 0 ? await states.create(stateKey, JSON.stringify(next)) : await states.update(stateKey, JSON.stringify(next), a.rev)
      a.stored = next
      return true
    } catch (err) {
      // Someone else wrote this key: ownership moved. Forget the cached copy; the message is
      // redelivered to whoever owns the key now.
      run.keys.delete(key)
      if (!isWrongLastSequence(err)) throw err
      log.warn({ type: run.def.type, key }, 'actor state changed under this host: turn dropped')
      return false
    }
  }

  const onMessage = async (run: Run, m: JsMsg): Promise<void> => {
    const key = m.subject.slice(m.subject.lastIndexOf('.') + 1)
    if (run.stopping) {
      m.nak()
      return
    }
    let msg: unknown
    try {
      msg = JSON.parse(new TextDecoder().decode(m.data))
    } catch {
      msg = undefined
    }
    if (msg === undefined || !Value.Check(run.def.message, msg)) {
      await toDlq(run.def.type, key, m, 'message does not match the actor schema')
      return
    }
    if (m.info.deliveryCount > MAX_DELIVERIES) {
      await toDlq(run.def.type, key, m, `failed ${String(MAX_DELIVERIES)} deliveries`)
      return
    }
    const a = await load(run, key)
    a.pending++
    const step = async (): Promise<void> => {
      try {
        if (run.stopping) {
          m.nak()
          return
        }
        // A failing handler is retried in place first, so the key's later messages wait behind it
        // (per-key order); only then is the message handed back, counting toward the DLQ.
        let lastErr: unknown
        for (let attempt = 0; attempt < IN_PLACE_RETRIES; attempt++) {
          try {
            const ok = await turn(run, key, (ctx) => run.def.handle(ctx, msg), () => m.working())
            if (ok) m.ack()
            else m.nak()
            return
          } catch (err) {
            lastErr = err
            if (run.stopping) break
            await new Promise((r) => setTimeout(r, 50 * 2 ** attempt))
          }
        }
        log.warn({ err: lastErr, type: run.def.type, key, delivery: m.info.deliveryCount }, 'actor handler failed; message handed back for redelivery')
        m.nak(500)
      } finally {
        a.pending--
      }
    }
    a.chain = a.chain.then(step)
  }

  const fireTimers = (run: Run) => {
    const now = Date.now()
    for (const [key, a] of run.keys) {
      const due = Object.entries(a.stored.timers).filter(([, at]) => at <= now).map(([name]) => name)
      if (due.length === 0 || a.pending > 0 || run.def.onTimer === undefined) continue
      const onTimer = run.def.onTimer
      a.pending++
      const step = async (): Promise<void> => {
        try {
          for (const name of due) {
            await turn(run, key, async (ctx) => {
              ctx.clearTimer(name)
              await onTimer(ctx, name)
            })
          }
        } catch (err) {
          log.warn({ err, type: run.def.type, key }, 'actor timer failed; retried next tick')
        } finally {
          a.pending--
        }
      }
      a.chain = a.chain.then(step)
    }
    // Idle eviction: the state stays in the bucket; the instance is reloaded on its next message.
    const idleMs = run.def.idleMs ?? 5 * 60_000
    for (const [key, a] of run.keys) {
      if (a.pending === 0 && Object.keys(a.stored.timers).length === 0 && now - a.lastUsed > idleMs) run.keys.delete(key)
    }
  }

  /*
   * The state keys of a type, listed once per tick for all the partitions it acquires (not once per
   * partition), and bounded in time: on a fresh server the key listing (an ordered consumer) was
   * seen to hang ~30 s, which stalled the first tick half-way and left partitions unowned.
   */
  let keyCache: { at: number; type: string; keys: Promise<string[]> } | null = null
  const stateKeys = (type: string): Promise<string[]> => {
    if (keyCache !== null && keyCache.type === type && performance.now() - keyCache.at < tickMs) return keyCache.keys
    const listing = (async () => {
      const out: string[] = []
      for await (const k of await states.keys(`${type}.>`)) out.push(k)
      return out
    })()
    const bounded = Promise.race([
      listing,
      new Promise<string[]>((resolve) =>
        setTimeout(() => {
          log.warn({ type }, 'listing actor state keys timed out: timers of this type are restored on the next acquisition')
          resolve([])
        }, 3_000).unref(),
      ),
    ])
    keyCache = { at: performance.now(), type, keys: bounded }
    return bounded
  }

  const startRun = async (def: AnyActor, p: number, leaseKey: string, rev: number, sentAt: number): Promise<void> => {
    const durable = consumerName(def.type, p)
    const stream = o.names.stream('ACTORS')
    // A fresh mailbox consumer at every acquisition. ACTORS is a work-queue stream, so what is left
    // of the partition is exactly what nobody acked; a new consumer (DeliverPolicy.All) delivers it
    // in stream order, i.e. each key's messages in the order sent. Reusing the old consumer was not
    // safe: the pull requests of a killed owner stay registered on the server (until they expire),
    // keep receiving messages — redeliveries included — that nobody reads, and those come back only
    // after another ack_wait, while the new owner already handles the same keys' newer messages.
    await jsm.consumers.delete(stream, durable).catch((err: unknown) => {
      if (!(err instanceof JetStreamApiError && err.status === 404)) throw err
    })
    await jsm.consumers.add(stream, {
      durable_name: durable,
      filter_subject: o.names.subject(`actor.${def.type}.${String(p)}.*`),
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      max_deliver: -1,
      ack_wait: ackWaitMs * 1e6,
      max_ack_pending: 256,
    })
    const run: Run = { def, p, leaseKey, fence: rev, rev, validUntil: sentAt + o.leaseTtlMs - margin, messages: undefined, loop: Promise.resolve(), keys: new Map(), stopping: false }
    // Timers survive a takeover: load the keys of this partition that have some.
    for (const k of await stateKeys(def.type)) {
      const key = k.slice(def.type.length + 1)
      if (partitionOf(key, def.partitions) !== p) continue
      const e = await states.get(k)
      if (e !== null && e.operation === 'PUT' && e.length > 0 && Object.keys(e.json<Stored>().timers).length > 0) await load(run, key)
    }
    const consume = async () => {
      if (run.stopping) return
      const messages = await (await js.consumers.get(stream, durable)).consume({ max_messages: 64 })
      run.messages = messages
      for await (const m of messages) await onMessage(run, m)
    }
    run.loop = consume().catch((err: unknown) => log.warn({ err, partition: leaseKey }, 'mailbox loop ended'))
    runs.set(leaseKey, run)
    log.info({ partition: leaseKey, fence: rev }, 'partition acquired')
  }

  const stopRun = async (run: Run, release: boolean): Promise<void> => {
    run.stopping = true
    runs.delete(run.leaseKey)
    await run.messages?.close().catch(() => undefined)
    await Promise.allSettled([...run.keys.values()].map((a) => a.chain))
    if (release) await leases.delete(run.leaseKey, { previousSeq: run.rev }).catch(() => undefined)
    log.info({ partition: run.leaseKey, release }, release ? 'partition handed off' : 'partition lease lost: stopped')
  }

  const tick = async (): Promise<void> => {
    const live = await liveHosts()
    for (const def of o.actors) {
      for (let p = 0; p < def.partitions; p++) {
        if (stopped) return
        const leaseKey = `${def.type}.${String(p)}`
        const run = runs.get(leaseKey)
        const want = rendezvousOwner(live, def.type, p) === o.nodeId
        if (run !== undefined) {
          fireTimers(run)
          if (performance.now() > run.validUntil) await stopRun(run, false)
          else if (!want) await stopRun(run, true)
          else {
            const sentAt = performance.now()
            try {
              run.rev = await leases.update(leaseKey, o.nodeId, run.rev)
              run.validUntil = sentAt + o.leaseTtlMs - margin
            } catch (err) {
              log.warn({ err, partition: leaseKey }, 'lease renewal failed')
              if (isWrongLastSequence(err)) await stopRun(run, false)
            }
          }
        } else if (want) {
          const sentAt = performance.now()
          const rev = await leases.create(leaseKey, o.nodeId).catch(() => null)
          if (rev !== null) await startRun(def, p, leaseKey, rev, sentAt)
        }
      }
    }
  }

  let ticking: Promise<void> = Promise.resolve()
  const timer = setInterval(() => {
    ticking = ticking.then(tick).catch((err: unknown) => log.warn({ err }, 'actor host tick failed'))
  }, tickMs)
  ticking = tick().catch((err: unknown) => log.warn({ err }, 'actor host tick failed'))

  return {
    nodeId: o.nodeId,
    owned: () => [...runs.keys()].sort(),
    async stop() {
      stopped = true
      clearInterval(timer)
      await ticking
      await Promise.all([...runs.values()].map((r) => stopRun(r, true)))
      await heartbeat.stop()
    },
  }
}
