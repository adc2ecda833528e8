import type { ActorContext } from './define-actor.ts'
import { isWrongLastSequence } from '../../src/platform/jetstream.ts'
import type { Logger } from '../../src/kernel/log.ts'
import { stateKeyOf, type HostEnv, type KeyActor, type PartitionRun, type Stored } from './partition.ts'

/*
 * A key's state: loaded from ACTOR_STATE on first use, changed by one turn at a time, and written
 * by CAS on the revision it was read at before the turn counts as done (the caller acks after).
 */

/** The key's in-memory instance, loading its stored state (or the initial one) on first use. */
export async function loadKey(env: HostEnv, run: PartitionRun, key: string): Promise<KeyActor> {
  let a = run.keys.get(key)
  if (a === undefined) {
    const e = await env.states.get(stateKeyOf(run.def.protocol.type, key))
    // a concurrent load of the same key (a timer and a message) may have finished first
    const loaded = run.keys.get(key)
    if (loaded !== undefined) return loaded
    const exists = e !== null && e.operation === 'PUT' && e.length > 0
    // a deleted key's marker has a revision too: the next write expects it (0: nothing there)
    a = startKey(run, key, exists ? e.json<Stored>() : null, e === null ? 0 : e.revision)
  }
  return a
}

/**
 * A key of this partition in memory, from what the bucket holds (`stored` null: the initial state)
 * at revision `rev`. A key its sender has just made (`FRESH_KEY_HEADER`) starts here unread, at 0.
 */
export function startKey(run: PartitionRun, key: string, stored: Stored | null, rev: number): KeyActor {
  const a: KeyActor = {
    chain: Promise.resolve(),
    pending: 0,
    inbox: [],
    drainQueued: false,
    stored: stored ?? { state: run.def.initialState(key), timers: {} },
    rev,
    lastUsed: Date.now(),
    log: undefined,
  }
  run.keys.set(key, a)
  return a
}

/** The key's logger, made on first use: a pino child per turn cost more than the tally handler. */
const keyLog = (env: HostEnv, run: PartitionRun, key: string, a: KeyActor): Logger =>
  (a.log ??= env.log.child({ actor: run.def.protocol.type, key }))

/**
 * Keeps long turns' messages from being redelivered under them: called from the host's timer
 * check, it calls `working()` (through `keepAlive`) for turns running longer than a third of
 * ack_wait. One scan of the running turns instead of an interval armed and cleared per turn.
 */
export function keepTurnsAlive(env: HostEnv, run: PartitionRun, now = performance.now()): void {
  const every = Math.max(250, Math.floor(env.ackWaitMs / 3))
  for (const turn of run.turns) {
    if (now - turn.since < every) continue
    turn.since = now
    turn.keepAlive()
  }
}

/**
 * Runs one turn for a key and commits what it changed; returns whether the state was committed
 * (false: another host wrote the key — ownership moved — so the message must not be acked).
 * `keepAlive` is called while the turn runs (the message's `working()`), so a long handler is not
 * redelivered under it. A handler that throws commits nothing, and its error propagates.
 */
export async function runTurn(
  env: HostEnv,
  run: PartitionRun,
  key: string,
  body: TurnBody,
  keepAlive?: () => void,
): Promise<boolean> {
  const out = await runTurns(env, run, key, [body], keepAlive)
  if (out.failed) throw out.error
  return out.committed
}

export type TurnBody = (ctx: ActorContext<unknown>) => Promise<void>

export interface TurnsOutcome {
  /** The state the turns that ran produced was written (or nothing changed); false: ownership moved. */
  committed: boolean
  /** How many bodies ran to the end, from the first; their changes are what was committed. */
  ran: number
  /** `bodies[ran]` threw (its changes are discarded); false with `ran` short: the partition is stopping. */
  failed: boolean
  error: unknown
}

/**
 * Runs a key's turns one after another on one in-memory state — each handler sees the state the
 * previous one left — and writes the result with one CAS, before any of their messages is acked.
 * A key's consecutive messages thus cost one state write instead of one each. It stops at the
 * first handler that throws (that handler's changes are dropped; the earlier ones' are committed)
 * and before the next handler once the partition is stopping.
 */
export async function runTurns(
  env: HostEnv,
  run: PartitionRun,
  key: string,
  bodies: readonly TurnBody[],
  keepAlive?: () => void,
): Promise<TurnsOutcome> {
  const a = run.keys.get(key) ?? (await loadKey(env, run, key))
  a.lastUsed = Date.now()
  // `next` is never changed in place (each change makes a new object), so keeping the state from
  // before a handler, for when it throws, costs a reference instead of a copy per message
  let next: Stored = a.stored
  let dirty = false
  let ran = 0
  let failed = false
  let error: unknown
  const turn = keepAlive === undefined ? undefined : { since: performance.now(), keepAlive }
  if (turn !== undefined) run.turns.add(turn)
  try {
    for (const body of bodies) {
      if (ran > 0 && run.stopping) break
      const before = { next, dirty }
      const ctx: ActorContext<unknown> = {
        key,
        state: next.state,
        setState: (s) => {
          next = { ...next, state: s }
          dirty = true
        },
        setTimer: (name, ms) => {
          next = { ...next, timers: { ...next.timers, [name]: Date.now() + ms } }
          dirty = true
        },
        clearTimer: (name) => {
          if (name in next.timers) {
            const timers = { ...next.timers }
            delete timers[name]
            next = { ...next, timers }
            dirty = true
          }
        },
        fence: run.fence,
        get log() {
          return keyLog(env, run, key, a)
        },
      }
      try {
        await body(ctx)
      } catch (err) {
        next = before.next
        dirty = before.dirty
        failed = true
        error = err
        break
      }
      ran++
    }
  } finally {
    if (turn !== undefined) run.turns.delete(turn)
  }
  const committed = !dirty || (await commitState(env, run, key, a, next))
  return { committed, ran, failed, error }
}

/** Writes a key's next state by CAS on the revision it was read at (0: the key holds nothing yet). */
export async function commitState(
  env: HostEnv,
  run: PartitionRun,
  key: string,
  a: KeyActor,
  next: Stored,
): Promise<boolean> {
  try {
    a.rev = await env.writer.write(stateKeyOf(run.def.protocol.type, key), JSON.stringify(next), a.rev)
    a.stored = next
    return true
  } catch (err) {
    // Someone else wrote this key (ownership moved), or the write's outcome is unknown (timeout):
    // forget the cached copy — the next message reloads it — and leave the messages unacked, to be
    // redelivered to whoever owns the key now.
    if (run.keys.get(key) === a) run.keys.delete(key)
    if (!isWrongLastSequence(err)) throw err
    env.log.warn({ type: run.def.protocol.type, key }, 'actor state changed under this host: turn dropped')
    return false
  }
}
