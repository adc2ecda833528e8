import type { Static, TSchema } from '@sinclair/typebox'
import type { Logger } from '../../src/kernel/log.ts'

/*
 * An actor kind: typed messages (validated on send and on receipt), a state per key persisted in
 * the ACTOR_STATE bucket, handlers run one at a time per key, and timers that survive a takeover
 * (they live in the state). Keys must be NATS-subject safe (no dots, spaces or wildcards).
 */
export interface ActorContext<S> {
  key: string
  /** The state as of the last committed handler (initialState for a new key). */
  state: S
  /** Replaces the state; written (CAS) when the handler returns, before the message is acked. */
  setState(next: S): void
  /** Arms (or re-arms) a named timer; `onTimer` runs for it after `ms`, on whichever host owns the key then. */
  setTimer(name: string, ms: number): void
  clearTimer(name: string): void
  /** The partition lease revision: a fencing token for writes outside NATS (research §2.3). */
  fence: number
  log: Logger
}

export interface ActorDefinition<M extends TSchema = TSchema, S = unknown> {
  type: string
  /** Fixed for the life of the stream: changing it means draining and re-partitioning. */
  partitions: number
  message: M
  initialState(key: string): S
  handle(ctx: ActorContext<S>, msg: Static<M>): Promise<void>
  onTimer?(ctx: ActorContext<S>, name: string): Promise<void>
  /** Drop an idle key's in-memory instance after this long (its state stays in the bucket). */
  idleMs?: number
}

export type AnyActor = ActorDefinition<TSchema, unknown>

export const KEY_PATTERN = /^[A-Za-z0-9_-]{1,200}$/

export function defineActor<M extends TSchema, S>(def: ActorDefinition<M, S>): ActorDefinition<M, S> {
  if (!/^[a-z][a-z0-9_-]*$/.test(def.type)) throw new Error(`actor type ${def.type}: lower-case letters, digits, - and _`)
  if (!Number.isInteger(def.partitions) || def.partitions < 1 || def.partitions > 1024) throw new Error(`actor type ${def.type}: partitions must be 1..1024`)
  return def
}
