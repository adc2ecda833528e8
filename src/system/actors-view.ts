import { jetstreamManager, type JetStreamManager, type MsgRequest, type NextMsgRequest } from '@nats-io/jetstream'
import { Kvm, type KV } from '@nats-io/kv'
import { ACTOR_PROTOCOLS } from '../../actors/protocols/index.ts'
import { consumerName } from '../../actors/runtime/mailbox.ts'
import { drainRequests, type DrainRequest } from '../../actors/runtime/shards.ts'
import type { SystemActorHosts, SystemActors } from '../../schemas/system.ts'
import { listMembers, workersBucket, type Member } from '../platform/heartbeat.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { kvKeys } from '../platform/jetstream.ts'

/*
 * The operators' view of the actor shards (`GET /api/v1/system/actors` and `…/actors/hosts`), read
 * from NATS only: the actor hosts' heartbeats (WORKERS, role `actors`, `draining` in a draining
 * host's beat), the drain requests (ACTOR_SHARDS), the partition leases (ACTOR_LEASES: owner,
 * revision = fence, last write = acquisition or renewal) and each partition's mailbox: its consumer
 * (num_pending + num_ack_pending on the ACTORS stream) and, when it has a backlog, its oldest
 * message (the first one left on `actor.<type>.<p>.*` of the work-queue stream: acknowledged
 * messages are deleted, so the first one is the oldest not handled; a STREAM.MSG.GET with
 * `next_by_subj`, which nats-server 2.9 answers without direct get). A partition without a lease
 * is being taken over (its host died, the lease has not expired yet) or was never acquired.
 */
async function openOrNull(nc: NatsConnection, bucket: string): Promise<KV | null> {
  return new Kvm(nc).open(bucket, { bindOnly: true }).catch(() => null)
}

interface Lease {
  owner: string
  fence: number
  at: number
}

interface Snapshot {
  jsm: JetStreamManager
  ttl: number | null
  /** `<type>.<partition>` → lease. */
  leases: Map<string, Lease>
  members: Member[]
  drains: Map<string, DrainRequest>
}

async function snapshot(nc: NatsConnection, names: NatsNames): Promise<Snapshot> {
  const jsm = await jetstreamManager(nc)
  const bucket = await openOrNull(nc, names.bucket('ACTOR_LEASES'))
  const leases = new Map<string, Lease>()
  let ttl: number | null = null
  if (bucket !== null) {
    ttl = (await bucket.status()).ttl
    for (const k of await kvKeys(bucket)) {
      const e = await bucket.get(k)
      if (e !== null && e.operation === 'PUT' && e.length > 0)
        leases.set(k, { owner: e.string(), fence: e.revision, at: e.created.getTime() })
    }
  }
  const members = await listMembers(await workersBucket(nc, names), 'actors').catch(() => [])
  const shards = await openOrNull(nc, names.bucket('ACTOR_SHARDS'))
  const drains = shards === null ? new Map<string, DrainRequest>() : await drainRequests(shards)
  return { jsm, ttl, leases, members, drains }
}

/** A partition's mailbox: backlog, and the age of its oldest message when it has one. */
async function mailbox(
  s: Snapshot,
  names: NatsNames,
  type: string,
  p: number,
  now: number,
): Promise<{ backlog: number | null; oldest_age_ms: number | null }> {
  const stream = names.stream('ACTORS')
  const subject = names.subject(`actor.${type}.${String(p)}.*`)
  const info = await s.jsm.consumers.info(stream, consumerName(type, p)).catch(() => null)
  // a partition never acquired has no consumer yet: what waits is counted on the stream itself
  const backlog =
    info !== null
      ? info.num_pending + info.num_ack_pending
      : await s.jsm.streams.info(stream, { subjects_filter: subject }).then(
          (si) => Object.values(si.state.subjects ?? {}).reduce((n, c) => n + c, 0),
          () => null,
        )
  if (backlog === 0 || backlog === null) return { backlog, oldest_age_ms: null }
  // STREAM.MSG.GET takes `next_by_subj` (with a wildcard) on nats-server 2.9.10 too; the client
  // types it for direct get only, which ACTORS does not enable
  const next: NextMsgRequest = { next_by_subj: subject, seq: 1 }
  const first = await s.jsm.streams.getMessage(stream, next as unknown as MsgRequest).catch(() => null)
  return { backlog, oldest_age_ms: first === null ? null : Math.max(0, now - first.time.getTime()) }
}

type HostState = 'active' | 'draining' | 'drained' | 'gone'

function hostRows(s: Snapshot): {
  node_id: string
  state: HostState
  last_seen: string | null
  drain_requested_at: string | null
  partitions: number
}[] {
  const counts = new Map<string, number>()
  for (const l of s.leases.values()) counts.set(l.owner, (counts.get(l.owner) ?? 0) + 1)
  const beating = new Map(s.members.map((m) => [m.nodeId, m]))
  const ids = [...new Set([...beating.keys(), ...counts.keys()])].sort()
  return ids.map((id) => {
    const m = beating.get(id)
    const owned = counts.get(id) ?? 0
    const draining = s.drains.has(id) || m?.info['draining'] === true
    const state: HostState = m === undefined ? 'gone' : draining ? (owned > 0 ? 'draining' : 'drained') : 'active'
    return {
      node_id: id,
      state,
      last_seen: m?.last_seen ?? null,
      drain_requested_at: s.drains.get(id)?.requested_at ?? null,
      partitions: owned,
    }
  })
}

export async function actorShards(nc: NatsConnection, names: NatsNames, now = Date.now()): Promise<SystemActors> {
  const s = await snapshot(nc, names)
  const types = await Promise.all(
    ACTOR_PROTOCOLS.map(async (proto) => {
      const shards = await Promise.all(
        Array.from({ length: proto.partitions }, async (_, p) => {
          const lease = s.leases.get(`${proto.type}.${String(p)}`)
          return {
            partition: p,
            owner: lease?.owner ?? null,
            fence: lease?.fence ?? null,
            lease_age_ms: lease === undefined ? null : Math.max(0, now - lease.at),
            ...(await mailbox(s, names, proto.type, p, now)),
          }
        }),
      )
      return {
        type: proto.type,
        partitions: proto.partitions,
        owned: shards.filter((x) => x.owner !== null).length,
        backlog: shards.reduce((n, x) => n + (x.backlog ?? 0), 0),
        shards,
      }
    }),
  )
  return { lease_ttl_ms: s.ttl, hosts: hostRows(s), types }
}

/** The default lease tick of a host (actors/runtime/host.ts): TTL / 5, at least 200 ms. */
export const tickOf = (ttlMs: number): number => Math.max(200, Math.floor(ttlMs / 5))

/**
 * Every actor host (beating or still holding leases) with the partitions it owns, of any actor type
 * found in the lease bucket.
 */
export async function actorHosts(nc: NatsConnection, names: NatsNames, now = Date.now()): Promise<SystemActorHosts> {
  const s = await snapshot(nc, names)
  const owned = new Map<string, SystemActorHosts['hosts'][number]['owned']>()
  await Promise.all(
    [...s.leases.entries()].map(async ([key, lease]) => {
      const dot = key.lastIndexOf('.')
      const type = key.slice(0, dot)
      const partition = Number(key.slice(dot + 1))
      const row = {
        type,
        partition,
        fence: lease.fence,
        lease_age_ms: Math.max(0, now - lease.at),
        ...(await mailbox(s, names, type, partition, now)),
      }
      owned.set(lease.owner, [...(owned.get(lease.owner) ?? []), row])
    }),
  )
  const byPartition = (a: { type: string; partition: number }, b: { type: string; partition: number }): number =>
    a.type === b.type ? a.partition - b.partition : a.type.localeCompare(b.type)
  return {
    lease_ttl_ms: s.ttl,
    tick_ms: s.ttl === null ? null : tickOf(s.ttl),
    hosts: hostRows(s).map((h) => ({ ...h, owned: (owned.get(h.node_id) ?? []).sort(byPartition) })),
  }
}

/** One host's row (for the drain answers), or null when it neither beats nor holds a lease. */
export async function actorHost(
  nc: NatsConnection,
  names: NatsNames,
  nodeId: string,
): Promise<{ node_id: string; state: HostState; drain_requested_at: string | null } | null> {
  const row = hostRows(await snapshot(nc, names)).find((h) => h.node_id === nodeId)
  return row === undefined
    ? null
    : { node_id: row.node_id, state: row.state, drain_requested_at: row.drain_requested_at }
}

/** The hosts taking a share now (beating, not draining), for refusing to drain the last one. */
export async function activeHosts(nc: NatsConnection, names: NatsNames): Promise<string[]> {
  return hostRows(await snapshot(nc, names))
    .filter((h) => h.state === 'active')
    .map((h) => h.node_id)
}
