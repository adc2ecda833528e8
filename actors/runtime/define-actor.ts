import type { JetStreamClient } from '@nats-io/jetstream'
import type { Config } from '../../src/kernel/config.ts'
import type { Logger } from '../../src/kernel/log.ts'
import type { NatsConnection } from '../../src/platform/nats.ts'
import type { NatsNames } from '../../src/platform/nats-names.ts'
import type { ActorProtocol, MessageName, MessagePayload } from '../../schemas/actor-protocol.ts'

/*
 * An actor implementation: its protocol, a state per key persisted in the ACTOR_STATE bucket, one
 * handler per named message (run one at a time per key) and named timers that survive a takeover
 * (they live in the state). Keys must be NATS-subject safe (no dots, spaces or wildcards).
 */
export interface ActorContext<S, TimerName extends string = string> {
  key: string
  /** The state as of the last committed handler (the initial state for a new key). */
  state: S
  /** Replaces the state; written (CAS) when the handler returns, before the message is acked. */
  setState(next: S): void
  /** Arms (or re-arms) a named timer; its handler runs after `ms`, on whichever host owns the key then. */
  setTimer(name: TimerName, ms: number): void
  clearTimer(name: TimerName): void
  /** The partition lease revision: a fencing token for writes outside NATS. */
  fence: number
  log: Logger
}

export interface ActorDeclaration<P extends ActorProtocol, S, TimerName extends string> {
  protocol: P
  state: {
    /** The state of a key never seen before. */
    initial(key: string): S
    /** Drop an idle key's in-memory instance after this long (its state stays in the bucket; default 5 min). */
    idleMs?: number
  }
  handlers: { [N in MessageName<P>]: (ctx: ActorContext<S, TimerName>, msg: MessagePayload<P, N>) => Promise<void> }
  timers?: { [T in TimerName]: (ctx: ActorContext<S, TimerName>) => Promise<void> }
}

/**
 * What a host runs: the declaration with its types erased. The host checks every message against
 * the protocol before `handle` sees it, and the state is only ever what `initial` or a handler made.
 */
export interface Actor {
  protocol: ActorProtocol
  idleMs: number
  initialState(key: string): unknown
  handle(ctx: ActorContext<unknown>, name: string, payload: unknown): Promise<void>
  /** Runs a timer's handler; a timer this implementation does not know is dropped. */
  onTimer(ctx: ActorContext<unknown>, name: string): Promise<void>
}

export const KEY_PATTERN = /^[A-Za-z0-9_-]{1,200}$/

export function defineActor<P extends ActorProtocol, S, TimerName extends string = never>(
  decl: ActorDeclaration<P, S, TimerName>,
): Actor {
  const { type, partitions } = decl.protocol
  if (!/^[a-z][a-z0-9_-]*$/.test(type)) throw new Error(`actor type ${type}: lower-case letters, digits, - and _`)
  if (!Number.isInteger(partitions) || partitions < 1 || partitions > 1024)
    throw new Error(`actor type ${type}: partitions must be 1..1024`)
  const missing = Object.keys(decl.protocol.messages).filter(
    (n) => typeof (decl.handlers as Record<string, unknown>)[n] !== 'function',
  )
  if (missing.length > 0) throw new Error(`actor type ${type}: no handler for ${missing.join(', ')}`)
  // The one place types are erased: the host validated the payload against this protocol.
  type Handler = (ctx: ActorContext<unknown>, msg: unknown) => Promise<void>
  const handlers = decl.handlers as unknown as Record<string, Handler>
  const timers = (decl.timers ?? {}) as unknown as Record<
    string,
    ((ctx: ActorContext<unknown>) => Promise<void>) | undefined
  >
  return {
    protocol: decl.protocol,
    idleMs: decl.state.idleMs ?? 5 * 60_000,
    initialState: (key) => decl.state.initial(key),
    handle: (ctx, name, payload) => (handlers[name] as Handler)(ctx, payload),
    onTimer: async (ctx, name) => {
      const fire = Object.hasOwn(timers, name) ? timers[name] : undefined
      if (fire === undefined) ctx.log.warn({ timer: name }, 'timer without a handler dropped')
      else await fire(ctx)
    },
  }
}

/** What an actor implementation may be built from: the platform handles of the host process. */
export interface ActorPlatform {
  nc: NatsConnection
  js: JetStreamClient
  names: NatsNames
  config: Config
  log: Logger
}

/**
 * Builds an actor implementation for a host process (the features contribute them as `actors`). `Extra`: what
 * an actor needs beyond the platform handles (the chat actor: this process's job workers), given
 * by the composition; the runtime knows nothing of it.
 */
export type ActorFactory<Extra extends object = object> = (p: ActorPlatform & Extra) => Promise<Actor>
