import type { ActorContext } from './define-actor.ts'
import { isWrongLastSequence } from '../../src/platform/jetstream.ts'
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

/**
 * Runs one turn for a key and commits what it changed; returns whether the state was committed
 * (false: another host wrote the key — ownership moved — so the message must not be acked).
 * `keepAlive` is called while the turn runs (the message's `working()`), so a long handler is not
 * redelivered under it.
 */
export async function runTurn(env: HostEnv, run: PartitionRun, key: string, body: (ctx: ActorContext<unknown>) => Promise<void>, keepAlive?: () => void): Promise<boolean> {
  const a = await loadKey(env, run, key)
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
    log: env.log.child({ actor: run.def.protocol.type, key }),
  }
  const alive = keepAlive === undefined ? undefined : setInterval(keepAlive, Math.max(250, Math.floor(env.ackWaitMs / 3)))
  try {
    await body(ctx)
  } finally {
    if (alive !== undefined) clearInterval(alive)
  }
  if (!dirty) return true
  return commitState(env, run, key, a, next)
}

/** Writes a key's next state by CAS on the revision it was read at. */
export async function commitState(env: HostEnv, run: PartitionRun, key: string, a: KeyActor, next: Stored): Promise<boolean> {
  const stateKey = stateKeyOf(run.def.protocol.type, key)
  try {
    a.rev = a.rev === 0 ? await env.states.create(stateKey, JSON.stringify(next)) : await env.states.update(stateKey, JSON.stringify(next), a.rev)
    a.stored = next
    return true
  } catch (err) {
    // Someone else wrote this key: ownership moved. Forget the cached copy; the message is
    // redelivered to whoever owns the key now.
    run.keys.delete(key)
    if (!isWrongLastSequence(err)) throw err
    env.log.warn({ type: run.def.protocol.type, key }, 'actor state changed under this host: turn dropped')
    return false
  }
}
