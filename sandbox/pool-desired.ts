import type { KV, KvEntry } from '@nats-io/kv'
import { Value } from '@sinclair/typebox/value'
import { initialPoolDesired, PoolDesired, type PoolKey } from '../schemas/sandbox-pool.ts'
import type { Logger } from '../src/kernel/log.ts'
import { poolProtocol } from '../actors/protocols/pool.ts'
import { stateKeyOf, type Stored } from '../actors/runtime/partition.ts'

/*
 * Reading a pool actor's state (actors/pool/) from outside the actor (read-only): ACTOR_STATE key
 * `pool.<key>`, value `{ state, timers }`. What the worker processes converge to (control.ts) and
 * the admin endpoints show. Here, with the sandboxes, rather than with the actor: the engine reads
 * it, and an engine imports no actor behaviour.
 * A key never written is the initial state (nothing asked yet).
 */
export const desiredKey = (pool: PoolKey): string => stateKeyOf(poolProtocol.type, pool)

function decode(e: KvEntry | null): PoolDesired {
  if (e === null || e.operation !== 'PUT' || e.length === 0) return initialPoolDesired()
  const state = e.json<Stored>().state
  return Value.Check(PoolDesired, state) ? state : initialPoolDesired()
}

export async function readDesired(states: KV, pool: PoolKey): Promise<PoolDesired> {
  return decode(await states.get(desiredKey(pool)))
}

/**
 * Calls `onChange` with every pool's state as it is written (the current ones first). The
 * watcher is an ordered consumer the client recreates after a gap; callers still re-read
 * periodically (a missed update is repaired at the next read). Returns a stop function.
 */
export async function watchDesired(
  states: KV,
  onChange: (pool: PoolKey, d: PoolDesired) => void,
  log: Logger,
): Promise<() => void> {
  const prefix = `${poolProtocol.type}.`
  const it = await states.watch({ key: `${prefix}>` })
  void (async () => {
    for await (const e of it) {
      const pool = e.key.slice(prefix.length)
      if (pool === 'sandbox' || pool === 'shared') onChange(pool, decode(e))
    }
  })().catch((err: unknown) => log.warn({ err }, 'pool state watch ended'))
  return () => it.stop()
}
