import type { KV } from '@nats-io/kv'
import { kvKeys } from '../../src/platform/jetstream.ts'

/** Who holds each actor partition lease now (ACTOR_LEASES, keys `<type>.<partition>`), optionally of one type (`schedule.>`). */
export async function leaseOwners(leases: KV, filter = '>'): Promise<Map<string, string>> {
  const out = new Map<string, string>()
  for (const k of await kvKeys(leases, filter)) {
    const e = await leases.get(k)
    if (e !== null && e.operation === 'PUT' && e.length > 0) out.set(k, e.string())
  }
  return out
}

/** The same by partition number, for one actor type. */
export async function partitionOwners(leases: KV, type: string): Promise<Map<number, string>> {
  const byKey = await leaseOwners(leases, `${type}.>`)
  return new Map([...byKey].map(([k, owner]) => [Number(k.slice(type.length + 1)), owner]))
}
