import { Kvm, type KV } from '@nats-io/kv'
import { streamReplicasOf } from '../../src/platform/stream-replicas.ts'
import type { NatsConnection } from '../../src/platform/nats.ts'
import type { NatsNames } from '../../src/platform/nats-names.ts'
import type { Actor } from './define-actor.ts'
import { kvKeys } from '../../src/platform/jetstream.ts'

/*
 * The operators' side of the shards, in the KV bucket ACTOR_SHARDS (history 1, no TTL):
 *
 *  - `drain.<nodeId>` → `DrainRequest`: the operator asked this host to give up its partitions
 *    (`POST /api/v1/system/actors/hosts/{nodeId}/drain`). The host reads its own key every tick; a
 *    KV key rather than a request to the host's subject because it is state, not an event: it holds
 *    while the host is busy or reconnecting, whichever service process answers the API writes it
 *    without reaching the host, every process reads the same answer (the operators' view), and
 *    deleting it is the undrain. The host deletes its key when it stops (node ids are not reused).
 *  - `partitions.<type>` → the partition count the installation was created with, written by the
 *    first host that runs the type. A key's partition is FNV-1a(key) mod P (hash.ts), so another
 *    count would send a key's messages to a partition whose consumer, lease and timers know nothing
 *    of its earlier ones: a host whose code declares another count refuses to start.
 */
export interface DrainRequest {
  requested_at: string
  /** The principal that asked (user id), for the record. */
  by: string
}

export async function openShards(nc: NatsConnection, names: NatsNames): Promise<KV> {
  return new Kvm(nc).create(names.bucket('ACTOR_SHARDS'), { history: 1, replicas: streamReplicasOf(nc) })
}

export const drainKey = (nodeId: string): string => `drain.${nodeId}`

/** Node ids are KV key tokens: letters, digits, `-` and `_` (the actors role uses 8 hex digits). */
export const validNodeId = (nodeId: string): boolean => /^[A-Za-z0-9_-]{1,64}$/.test(nodeId)

export async function requestDrain(kv: KV, nodeId: string, by: string): Promise<DrainRequest> {
  const existing = await drainRequested(kv, nodeId)
  if (existing !== null) return existing
  const req: DrainRequest = { requested_at: new Date().toISOString(), by }
  await kv.put(drainKey(nodeId), JSON.stringify(req))
  return req
}

export async function cancelDrain(kv: KV, nodeId: string): Promise<void> {
  await kv.delete(drainKey(nodeId))
}

export async function drainRequested(kv: KV, nodeId: string): Promise<DrainRequest | null> {
  const e = await kv.get(drainKey(nodeId))
  return e === null || e.operation !== 'PUT' || e.length === 0 ? null : e.json<DrainRequest>()
}

/** Every drain request, by node id. */
export async function drainRequests(kv: KV): Promise<Map<string, DrainRequest>> {
  const out = new Map<string, DrainRequest>()
  for (const k of await kvKeys(kv, 'drain.*')) {
    const req = await drainRequested(kv, k.slice('drain.'.length))
    if (req !== null) out.set(k.slice('drain.'.length), req)
  }
  return out
}

/** Thrown at start-up by a host whose code declares another partition count than the installation's. */
export class PartitionCountChanged extends Error {
  readonly type: string
  readonly recorded: number
  readonly declared: number
  constructor(type: string, recorded: number, declared: number) {
    super(
      `actor type ${type} was created with ${String(recorded)} partitions in this installation, but this code declares ` +
        `${String(declared)}: the partition count of an actor type is fixed (a key's partition is FNV-1a(key) mod ` +
        `partitions, so another count would move keys away from their queued messages, leases and timers). ` +
        `Run the code with ${String(recorded)} partitions (see "Scaling actor shards" in docs/operations.md).`,
    )
    this.name = 'PartitionCountChanged'
    this.type = type
    this.recorded = recorded
    this.declared = declared
  }
}

/**
 * Records each type's partition count on first use (CAS create: one writer wins) and refuses a
 * different one. An installation from before this record gets the count of the first host that
 * runs this check.
 */
export async function checkPartitionCounts(kv: KV, actors: readonly Actor[]): Promise<void> {
  for (const { protocol } of actors) {
    const key = `partitions.${protocol.type}`
    const recorded = await kv.create(key, String(protocol.partitions)).then(
      () => protocol.partitions,
      async (err: unknown) => {
        const e = await kv.get(key)
        if (e === null || e.operation !== 'PUT') throw err
        return Number(e.string())
      },
    )
    if (recorded !== protocol.partitions) throw new PartitionCountChanged(protocol.type, recorded, protocol.partitions)
  }
}
