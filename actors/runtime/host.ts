import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import type { Logger } from '../../src/kernel/log.ts'
import { startHeartbeat, workersBucket } from '../../src/platform/heartbeat.ts'
import type { NatsConnection } from '../../src/platform/nats.ts'
import type { NatsNames } from '../../src/platform/nats-names.ts'
import type { Actor } from './define-actor.ts'
import { rendezvousOwner } from './hash.ts'
import { acquireLease, leaseDeadline, leaseMargin, liveHosts, releaseLease, renewLease } from './leases.ts'
import { consumeMailbox, replaceMailboxConsumer } from './mailbox.ts'
import type { HostEnv, PartitionRun } from './partition.ts'
import { outbox } from './outbox.ts'
import { provisionActors } from './provision.ts'
import { checkPartitionCounts, drainKey, drainRequested, openShards } from './shards.ts'
import { keepTurnsAlive } from './state.ts'
import { stateWriter } from './state-writer.ts'
import { hostTeller, type ActorTeller } from './tell.ts'
import { fireTimers, restoreTimedKeys, stateKeyLister } from './timers.ts'

/*
 * An actor host: owns some partitions of every actor type it runs and works their mailboxes. Each
 * tick it beats, works out which partitions it should own (`leases.ts`), acquires, renews or hands
 * them off, fires due timers (`timers.ts`); an acquired partition gets a fresh mailbox consumer
 * (`mailbox.ts`) whose messages run one turn at a time per key with CAS state writes (`state.ts`).
 * A drained host (the operator's `drain.<nodeId>` in ACTOR_SHARDS, `shards.ts`, or `stop()`) beats
 * with `draining`, so the other hosts stop counting it as an owner, wants no partition, and hands
 * its partitions off one per tick step, each after the turns in progress on it have finished.
 */
export interface ActorHostOptions {
  nc: NatsConnection
  names: NatsNames
  nodeId: string
  actors: Actor[]
  log: Logger
  leaseTtlMs: number
  /** Lease and membership tick (default TTL / 5); heartbeats go out at the same pace. */
  tickMs?: number
  /** Mailbox redelivery time of an unacked message (default 15 s). */
  ackWaitMs?: number
  /**
   * How often due timers are checked besides the tick (default min(tick, 250 ms)): a timer fires at
   * most this late, so a schedule's tick does not wait for the next lease tick.
   */
  timerMs?: number
  /**
   * Called after every tick with the partitions owned then: a test or bench follows the host's own
   * clock (how many ticks a hand-off took) instead of the wall clock of a loaded machine.
   */
  onTick?: (owned: readonly string[]) => void
}

export interface ActorHost extends ActorTeller {
  nodeId: string
  /** Partitions owned now, as `<type>.<partition>`. */
  owned(): string[]
  /** Asked to drain (by the operator, or stopping): it acquires nothing and hands off what it owns. */
  draining(): boolean
  stop(): Promise<void>
}

/**
 * Waits until nats-server has applied this host's acks (and naks) to the partition's consumer. The
 * server queues a consumer's acks and applies them on its own goroutine, and drops the ones still
 * queued when the consumer is deleted — which the next owner does as soon as it acquires: an ack
 * lost that way leaves a message whose state is written in the work-queue stream, to be run a
 * second time by the next owner. A `+WPI` (in progress) with a reply on the ack subject of the last
 * delivery is queued behind them, and answered only once they are applied (for a message no longer
 * pending it changes nothing). Bounded: a consumer already gone answers nothing.
 */
async function ackBarrier(env: HostEnv, run: PartitionRun): Promise<void> {
  if (run.lastAckSubject === undefined) return
  await env.nc
    .request(run.lastAckSubject, '+WPI', { timeout: Math.max(1000, env.tickMs) })
    .catch((err: unknown) => env.log.warn({ err, partition: run.leaseKey }, 'ack barrier unanswered'))
}

export async function startActorHost(o: ActorHostOptions): Promise<ActorHost> {
  const tickMs = o.tickMs ?? Math.max(200, Math.floor(o.leaseTtlMs / 5))
  await provisionActors(o.nc, o.names, { leaseTtlMs: o.leaseTtlMs })
  const shards = await openShards(o.nc, o.names)
  await checkPartitionCounts(shards, o.actors)
  const kvm = new Kvm(o.nc)
  const out = outbox((err) => o.log.warn({ err, actorHost: o.nodeId }, 'an outgoing ack or state write failed'))
  const env: HostEnv = {
    nodeId: o.nodeId,
    nc: o.nc,
    js: jetstream(o.nc),
    jsm: await jetstreamManager(o.nc),
    names: o.names,
    states: await kvm.open(o.names.bucket('ACTOR_STATE')),
    out,
    writer: stateWriter(o.nc, o.names.bucket('ACTOR_STATE'), out),
    leases: await kvm.open(o.names.bucket('ACTOR_LEASES')),
    leaseWriter: stateWriter(o.nc, o.names.bucket('ACTOR_LEASES'), out),
    log: o.log.child({ actorHost: o.nodeId }),
    leaseTtlMs: o.leaseTtlMs,
    tickMs,
    ackWaitMs: o.ackWaitMs ?? 15_000,
    margin: leaseMargin(o.leaseTtlMs, tickMs),
  }
  const workers = await workersBucket(o.nc, o.names)
  const runs = new Map<string, PartitionRun>()
  /** Stopped runs still finishing their turns (kept alive meanwhile). */
  const finishing = new Set<PartitionRun>()
  const stateKeys = stateKeyLister(env)
  /** Told messages being handed to the mailbox stream (tell.ts): sent before the host stops. */
  const handOffs = new Set<Promise<void>>()
  const teller = hostTeller(env, runs, handOffs)
  let stopped = false
  let draining = false
  let drainedLogged = false

  const heartbeat = startHeartbeat({
    kv: workers,
    role: 'actors',
    nodeId: o.nodeId,
    info: () => (draining ? { partitions: runs.size, draining: true } : { partitions: runs.size }),
    log: env.log,
    intervalMs: tickMs,
  })
  await heartbeat.beat()

  const startRun = async (def: Actor, p: number, leaseKey: string, rev: number, sentAt: number): Promise<void> => {
    await replaceMailboxConsumer(env, def.protocol.type, p)
    const run: PartitionRun = {
      def,
      p,
      leaseKey,
      fence: rev,
      rev,
      validUntil: leaseDeadline(env, sentAt),
      messages: undefined,
      lastAckSubject: undefined,
      loop: Promise.resolve(),
      keys: new Map(),
      loading: new Map(),
      stopping: false,
      restorePending: false,
      turns: new Set(),
      caughtUp: false,
    }
    await restoreTimedKeys(env, run, await stateKeys(def.protocol.type))
    run.loop = consumeMailbox(env, run).catch((err: unknown) =>
      env.log.warn({ err, partition: leaseKey }, 'mailbox loop ended'),
    )
    runs.set(leaseKey, run)
    env.log.info({ partition: leaseKey, fence: rev }, 'partition acquired')
  }

  /** Stops consuming, lets the keys' in-flight turns finish, and (hand-off) releases the lease. */
  const stopRun = async (run: PartitionRun, release: boolean): Promise<void> => {
    run.stopping = true
    runs.delete(run.leaseKey)
    finishing.add(run)
    await run.messages?.close().catch(() => undefined)
    await Promise.allSettled([...run.keys.values()].map((a) => a.chain))
    finishing.delete(run)
    // the last acks go out before the release: the next owner's fresh consumer must not get them
    await env.out.flushed()
    if (release) {
      await ackBarrier(env, run)
      await releaseLease(env, run.leaseKey, run.rev)
    }
    env.log.info(
      { partition: run.leaseKey, release },
      release ? 'partition handed off' : 'partition lease lost: stopped',
    )
  }

  /** One owned partition's tick: timers, then stop (lease lost or moved) or renew. */
  const keepRun = async (run: PartitionRun, want: boolean): Promise<void> => {
    if (run.restorePending && !run.stopping) await restoreTimedKeys(env, run, await stateKeys(run.def.protocol.type))
    fireTimers(env, run)
    if (performance.now() > run.validUntil) return stopRun(run, false)
    if (!want) return stopRun(run, true)
    const sentAt = performance.now()
    const renewed = await renewLease(env, run.leaseKey, run.rev)
    if (renewed.ok) {
      run.rev = renewed.rev
      run.validUntil = leaseDeadline(env, sentAt)
    } else if (renewed.lost) await stopRun(run, false)
  }

  /** Reads this host's drain request; a change is beaten at once so the peers see it this tick. */
  const checkDrain = async (): Promise<void> => {
    const wanted = await drainRequested(shards, o.nodeId).then(
      (r) => r !== null,
      () => draining,
    )
    if (stopped || wanted === draining) return
    draining = wanted
    drainedLogged = false
    env.log.info({ partitions: runs.size }, draining ? 'draining: handing every partition off' : 'drain cancelled')
    await heartbeat.beat()
  }

  const tick = async (): Promise<void> => {
    await checkDrain()
    const live = await liveHosts(workers, o.nodeId, tickMs, draining)
    for (const def of o.actors) {
      for (let p = 0; p < def.protocol.partitions; p++) {
        if (stopped) return
        const leaseKey = `${def.protocol.type}.${String(p)}`
        const run = runs.get(leaseKey)
        const want = !draining && rendezvousOwner(live, def.protocol.type, p) === o.nodeId
        if (run !== undefined) await keepRun(run, want)
        else if (want) {
          const sentAt = performance.now()
          const rev = await acquireLease(env, leaseKey)
          if (rev !== null) await startRun(def, p, leaseKey, rev, sentAt)
        }
      }
    }
    if (draining && runs.size === 0 && !drainedLogged) {
      drainedLogged = true
      env.log.info('drained: no partition owned')
    }
    o.onTick?.([...runs.keys()])
  }

  let ticking: Promise<void> = Promise.resolve()
  const timer = setInterval(() => {
    ticking = ticking.then(tick).catch((err: unknown) => env.log.warn({ err }, 'actor host tick failed'))
  }, tickMs)
  // Timers between ticks: only partitions still worked and within the lease deadline (the tick
  // itself fires them too; a key already busy is skipped, so a timer never runs twice at once).
  const timerMs = o.timerMs ?? Math.min(tickMs, 250)
  const timerCheck = setInterval(() => {
    const at = performance.now()
    for (const run of finishing) keepTurnsAlive(env, run, at)
    for (const run of runs.values()) {
      keepTurnsAlive(env, run, at)
      if (!run.stopping && at <= run.validUntil) fireTimers(env, run)
    }
  }, timerMs)
  ticking = tick().catch((err: unknown) => env.log.warn({ err }, 'actor host tick failed'))

  return {
    nodeId: o.nodeId,
    owned: () => [...runs.keys()].sort(),
    draining: () => draining,
    tell: (protocol, key, name, payload, opts) => teller.tell(protocol, key, name, payload, opts),
    tellDurably: (protocol, key, name, payload, opts) => teller.tellDurably(protocol, key, name, payload, opts),
    async stop() {
      stopped = true
      draining = true
      clearInterval(timer)
      clearInterval(timerCheck)
      await ticking
      // a drain: the peers stop counting this host as an owner, so each partition released below
      // is acquired on their next tick instead of after the heartbeat is gone. All at once, not one
      // by one as an operator's drain: the shutdown has a time budget (src/roles/lifecycle.ts) and
      // each partition waits only for its own turns in progress.
      await heartbeat.beat().catch((err: unknown) => env.log.warn({ err }, 'draining beat failed'))
      await Promise.all([...runs.values()].map((r) => stopRun(r, true)))
      await Promise.allSettled([...handOffs])
      await shards.delete(drainKey(o.nodeId)).catch(() => undefined)
      await heartbeat.stop()
      env.writer.close()
      env.leaseWriter.close()
    },
  }
}
