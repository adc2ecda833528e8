import type { ConsumerMessages, JetStreamClient, JetStreamManager } from '@nats-io/jetstream'
import type { KV } from '@nats-io/kv'
import type { Logger } from '../../src/kernel/log.ts'
import type { NatsConnection } from '../../src/platform/nats.ts'
import type { NatsNames } from '../../src/platform/nats-names.ts'
import type { Actor } from './define-actor.ts'
import type { Outbox } from './outbox.ts'
import type { StateWriter } from './state-writer.ts'

/*
 * The shapes the host's parts share: the handles and settings of one host (`HostEnv`), a partition
 * it runs (`PartitionRun`) and the in-memory instance of one key (`KeyActor`).
 */
export interface HostEnv {
  nodeId: string
  nc: NatsConnection
  js: JetStreamClient
  jsm: JetStreamManager
  names: NatsNames
  /** ACTOR_STATE: `<type>.<key>` → `Stored`. */
  states: KV
  /** Acks and state writes, sent together once per event-loop turn (outbox.ts). */
  out: Outbox
  /** CAS writes into ACTOR_STATE (state-writer.ts). */
  writer: StateWriter
  /** ACTOR_LEASES: `<type>.<partition>` → owner node id; the bucket TTL is the lease TTL. */
  leases: KV
  /** CAS renewals in ACTOR_LEASES. */
  leaseWriter: StateWriter
  log: Logger
  leaseTtlMs: number
  tickMs: number
  ackWaitMs: number
  /** How long before the lease's expiry on the server this host stops working a partition. */
  margin: number
}

/** What ACTOR_STATE holds per key: the actor's state and its armed timers (name → due, epoch ms). */
export interface Stored {
  state: unknown
  timers: Record<string, number>
}

/**
 * How a queued message is settled: its JetStream delivery (a `JsMsg`), or for a message told to the
 * host in-process (`ActorHost.tell`) an object whose `nak` hands it to the mailbox stream instead.
 */
export interface Delivery {
  ack(): void
  nak(delayMs?: number): void
  working(): void
  /** A JetStream delivery's count (absent for a told message, which is never redelivered as such). */
  readonly info?: { readonly deliveryCount: number }
}

/** A delivered mailbox message waiting in its key's inbox (checked against the protocol). */
export interface Queued {
  m: Delivery
  name: string
  payload: unknown
}

export interface KeyActor {
  /** The key's serial chain: one turn at a time. */
  chain: Promise<void>
  /** Turns queued on the chain and not finished (messages in the inbox included). */
  pending: number
  /** Delivered messages not handled yet, in delivery order (actors/runtime/mailbox.ts drains them). */
  inbox: Queued[]
  /** A drain of the inbox is queued on the chain. */
  drainQueued: boolean
  stored: Stored
  /** ACTOR_STATE revision of `stored` (0: never written). */
  rev: number
  lastUsed: number
  /** The key's logger for handlers, made on first use. */
  log: Logger | undefined
}

/** A turn running now, whose messages get `working()` while it lasts (state.ts keepTurnsAlive). */
export interface RunningTurn {
  since: number
  keepAlive: () => void
}

export interface PartitionRun {
  def: Actor
  p: number
  leaseKey: string
  /** Revision of the lease at acquisition: the fencing token. */
  fence: number
  /** Current lease revision, for the next CAS renewal. */
  rev: number
  /** Monotonic (performance.now) time after which this host must stop working the partition. */
  validUntil: number
  /** Set once consuming starts. */
  messages: ConsumerMessages | undefined
  /** The ack subject of the last delivery: the hand-off's barrier (host.ts ackBarrier). */
  lastAckSubject: string | undefined
  loop: Promise<void>
  keys: Map<string, KeyActor>
  /** Keys whose state is being loaded for their first message (mailbox.ts). */
  loading: Map<string, Promise<KeyActor>>
  stopping: boolean
  /** The keys with armed timers could not be listed at acquisition: retried every tick. */
  restorePending: boolean
  turns: Set<RunningTurn>
  /**
   * Nothing sent to the mailbox before this host took the partition waits undelivered any more
   * (the consumer had nothing pending when consuming started, or a delivery said so): from then
   * on a message told in-process cannot overtake one sent earlier (tell.ts).
   */
  caughtUp: boolean
}

export const stateKeyOf = (type: string, key: string): string => `${type}.${key}`
