import { jetstreamManager } from '@nats-io/jetstream'
import { Kvm, type KV } from '@nats-io/kv'
import { ACTOR_PROTOCOLS } from '../../actors/protocols/index.ts'
import { consumerName } from '../../actors/runtime/mailbox.ts'
import type { SystemActors } from '../../schemas/system.ts'
import { listMembers, workersBucket } from '../platform/heartbeat.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'

/*
 * The operators' view of the actor shards (`GET /api/v1/system/actors`), read from NATS only: the
 * actor hosts' heartbeats (WORKERS, role `actors`), the partition leases (ACTOR_LEASES: owner,
 * revision = fence, last write = acquisition or renewal) and each partition's mailbox consumer
 * (num_pending + num_ack_pending on the ACTORS stream). A partition without a lease is being taken
 * over (its host died, the lease has not expired yet) or was never acquired.
 */
async function openOrNull(nc: NatsConnection, bucket: string): Promise<KV | null> {
  return new Kvm(nc).open(bucket, { bindOnly: true }).catch(() => null)
}

export async function actorShards(nc: NatsConnection, names: NatsNames, now = Date.now()): Promise<SystemActors> {
  const jsm = await jetstreamManager(nc)
  const leases = await openOrNull(nc, names.bucket('ACTOR_LEASES'))
  const owners = new Map<string, { owner: string; fence: number; at: number }>()
  let ttl: number | null = null
  if (leases !== null) {
    ttl = (await leases.status()).ttl
    for await (const k of await leases.keys()) {
      const e = await leases.get(k)
      if (e !== null && e.operation === 'PUT' && e.length > 0)
        owners.set(k, { owner: e.string(), fence: e.revision, at: e.created.getTime() })
    }
  }
  const members = await listMembers(await workersBucket(nc, names), 'actors').catch(() => [])
  const stream = names.stream('ACTORS')
  const types = await Promise.all(
    ACTOR_PROTOCOLS.map(async (proto) => {
      const shards = await Promise.all(
        Array.from({ length: proto.partitions }, async (_, p) => {
          const lease = owners.get(`${proto.type}.${String(p)}`)
          const info = await jsm.consumers.info(stream, consumerName(proto.type, p)).catch(() => null)
          return {
            partition: p,
            owner: lease?.owner ?? null,
            fence: lease?.fence ?? null,
            lease_age_ms: lease === undefined ? null : Math.max(0, now - lease.at),
            backlog: info === null ? null : info.num_pending + info.num_ack_pending,
          }
        }),
      )
      return {
        type: proto.type,
        partitions: proto.partitions,
        owned: shards.filter((s) => s.owner !== null).length,
        backlog: shards.reduce((n, s) => n + (s.backlog ?? 0), 0),
        shards,
      }
    }),
  )
  const counts = new Map<string, number>()
  for (const o of owners.values()) counts.set(o.owner, (counts.get(o.owner) ?? 0) + 1)
  const hosts = members.map((m) => ({
    node_id: m.nodeId,
    last_seen: m.last_seen,
    partitions: counts.get(m.nodeId) ?? 0,
  }))
  return { lease_ttl_ms: ttl, hosts, types }
}
