import { Type as T, type Static } from '@sinclair/typebox'
import { Nullable } from './common.ts'

/* What the gateway answers itself. */
export const Health = T.Object({ status: T.Literal('ok'), nats: T.String(), version: T.String() })

/* The operators' view of the actor shards (`GET /api/v1/system/actors`). */

const Backlog = Nullable(
  T.Integer({
    description:
      'mailbox messages not yet handled: consumer num_pending + num_ack_pending, or for a partition never acquired (no consumer) the messages on its subject; null when unknown',
  }),
)
const OldestAge = Nullable(
  T.Integer({
    description:
      "age of the partition's oldest message not yet acknowledged (the first one left on its subject of the work-queue stream); null when none",
  }),
)

export const ActorPartition = T.Object({
  partition: T.Integer(),
  owner: Nullable(T.String({ description: 'node id of the host holding the lease; null: nobody (being taken over)' })),
  fence: Nullable(T.Integer({ description: 'lease revision: the fencing token' })),
  lease_age_ms: Nullable(T.Integer({ description: 'time since the lease was last written (acquired or renewed)' })),
  backlog: Backlog,
  oldest_age_ms: OldestAge,
})

export const ActorHostState = T.Union(
  [T.Literal('active'), T.Literal('draining'), T.Literal('drained'), T.Literal('gone')],
  {
    description:
      'active: takes its share; draining: asked to drain (or stopping), still owns partitions; drained: asked to drain, owns none; gone: no heartbeat, its leases not expired yet',
  },
)
export const ActorHostInfo = T.Object({
  node_id: T.String(),
  state: ActorHostState,
  last_seen: Nullable(T.String()),
  drain_requested_at: Nullable(T.String()),
  partitions: T.Integer({ description: 'partitions owned, from the lease bucket' }),
})
export const SystemActors = T.Object(
  {
    lease_ttl_ms: Nullable(T.Integer()),
    hosts: T.Array(ActorHostInfo),
    types: T.Array(
      T.Object({
        type: T.String(),
        partitions: T.Integer(),
        owned: T.Integer(),
        backlog: T.Integer(),
        shards: T.Array(ActorPartition),
      }),
    ),
  },
  { title: 'SystemActors' },
)
export type SystemActors = Static<typeof SystemActors>

/* `GET /api/v1/system/actors/hosts`: every actor host with the partitions it owns. */
export const HostPartition = T.Object({
  type: T.String(),
  partition: T.Integer(),
  fence: T.Integer(),
  lease_age_ms: T.Integer(),
  backlog: Backlog,
  oldest_age_ms: OldestAge,
})
export const SystemActorHosts = T.Object(
  {
    lease_ttl_ms: Nullable(T.Integer()),
    tick_ms: Nullable(
      T.Integer({ description: "the hosts' lease tick (lease TTL / 5): a joining host gets its share within 2 ticks" }),
    ),
    hosts: T.Array(T.Object({ ...ActorHostInfo.properties, owned: T.Array(HostPartition) })),
  },
  { title: 'SystemActorHosts' },
)
export type SystemActorHosts = Static<typeof SystemActorHosts>

export const ActorHostParams = T.Object({ node_id: T.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' }) })
export const ActorHostDrain = T.Object(
  {
    node_id: T.String(),
    state: ActorHostState,
    drain_requested_at: Nullable(T.String()),
  },
  { title: 'ActorHostDrain' },
)
export type ActorHostDrain = Static<typeof ActorHostDrain>
