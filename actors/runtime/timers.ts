import { partitionOf } from './hash.ts'
import { stateKeyOf, type HostEnv, type KeyActor, type PartitionRun, type Stored } from './partition.ts'
import { loadKey, runTurn } from './state.ts'
import { kvKeys } from '../../src/platform/jetstream.ts'

/*
 * Timers live in a key's stored state (name → due time), so they survive a takeover: the owner
 * checks its loaded keys every tick and runs due timers on the key's serial chain, and a new owner
 * loads the keys of its partition that have timers armed.
 */

/** The names of a key's timers that are due at `now`. */
export const dueTimers = (stored: Stored, now: number): string[] =>
  Object.entries(stored.timers)
    .filter(([, at]) => at <= now)
    .map(([name]) => name)

/** Whether any timer of a key is due; allocates nothing (see fireTimers). */
const anyDue = (stored: Stored, now: number): boolean => {
  for (const name in stored.timers) if ((stored.timers[name] as number) <= now) return true
  return false
}

/**
 * Queues the due timers of every loaded key that is not busy, then evicts idle keys. Runs every
 * ACTOR_TIMER_MS over every loaded key (10,000 armed schedules on a host: 40,000 keys a second),
 * so the keys with nothing due cost a loop and no allocation: that scan is the host's idle CPU.
 */
export function fireTimers(env: HostEnv, run: PartitionRun, now = Date.now()): void {
  for (const [key, a] of run.keys) {
    if (a.pending > 0 || !anyDue(a.stored, now)) continue
    const due = dueTimers(a.stored, now)
    a.pending++
    const step = async (): Promise<void> => {
      try {
        for (const name of due) {
          await runTurn(env, run, key, async (ctx) => {
            ctx.clearTimer(name)
            await run.def.onTimer(ctx, name)
          })
        }
      } catch (err) {
        env.log.warn({ err, type: run.def.protocol.type, key }, 'actor timer failed; retried next tick')
      } finally {
        a.pending--
      }
    }
    a.chain = a.chain.then(step)
  }
  evictIdle(run, now)
}

/** Idle eviction: the state stays in the bucket; the instance is reloaded on its next message. */
export function evictIdle(run: PartitionRun, now: number): void {
  for (const [key, a] of run.keys) if (isIdle(a, now, run.def.idleMs)) run.keys.delete(key)
}

// the cheap comparisons first: most keys of a busy host were used recently or have a timer armed
const isIdle = (a: KeyActor, now: number, idleMs: number): boolean =>
  a.pending === 0 && now - a.lastUsed > idleMs && !hasTimers(a.stored)

const hasTimers = (stored: Stored): boolean => {
  for (const _ in stored.timers) return true
  return false
}

/**
 * The state keys of a type, listed once per tick for all the partitions a host acquires (not once
 * per partition), and bounded in time: a listing that waits on a slow server must not stall the
 * tick half-way and leave partitions unowned (the ordered consumer this once used was seen to hang
 * ~30 s on a fresh server; `kvKeys` is one stream info request).
 */
export function stateKeyLister(env: HostEnv): (type: string) => Promise<string[] | null> {
  let cache: { at: number; type: string; keys: Promise<string[] | null> } | null = null
  return (type) => {
    if (cache !== null && cache.type === type && performance.now() - cache.at < env.tickMs) return cache.keys
    let timer: NodeJS.Timeout | undefined
    const listing = (async () => {
      const out = await kvKeys(env.states, `${type}.>`)
      env.log.debug({ type, keys: out.length }, 'actor state keys listed')
      return out
    })().finally(() => clearTimeout(timer))
    // The timer is cleared when the listing settles: left running, it warned 3 s after every
    // listing, finished or not (four warnings on each clean start, one per actor type).
    const bounded = Promise.race([
      listing,
      new Promise<null>((resolve) => {
        timer = setTimeout(() => {
          env.log.warn(
            { type },
            'listing actor state keys timed out: the timers of the partitions acquired now are restored on a later tick',
          )
          resolve(null)
        }, 3_000).unref()
      }),
    ])
    cache = { at: performance.now(), type, keys: bounded }
    return bounded
  }
}

/**
 * At acquisition: loads the keys of this partition that have timers armed, so they fire here.
 * When the listing timed out (null) the partition stays `restorePending` and the host tries again
 * on its next ticks — a schedule's timer must not wait for the next acquisition.
 */
export async function restoreTimedKeys(env: HostEnv, run: PartitionRun, stateKeys: string[] | null): Promise<void> {
  run.restorePending = stateKeys === null
  if (stateKeys === null) return
  const type = run.def.protocol.type
  for (const k of stateKeys) {
    const key = k.slice(type.length + 1)
    if (partitionOf(key, run.def.protocol.partitions) !== run.p) continue
    const e = await env.states.get(stateKeyOf(type, key))
    if (e !== null && e.operation === 'PUT' && e.length > 0 && Object.keys(e.json<Stored>().timers).length > 0)
      await loadKey(env, run, key)
  }
}
