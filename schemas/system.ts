import { Type as T, type Static } from '@sinclair/typebox'
import { Nullable } from './common.ts'

/* What the gateway answers itself. */
export const Health = T.Object({ status: T.Literal('ok'), nats: T.String(), version: T.String() })

/* The operators' view of the actor shards (`GET /api/v1/system/actors`). */

export const ActorPartition = T.Object({
  partition: T.Integer(),
  owner: Nullable(T.String({ description: 'node id of the host holding the lease; null: nobody (being taken over)' })),
  fence: Nullable(T.Integer({ description: 'lease revision: the fencing token' })),
  lease_age_ms: Nullable(T.Integer({ description: 'time since the lease was last written (acquired or renewed)' })),
  backlog: Nullable(
    T.Integer({
      description:
        'mailbox messages not yet handled (consumer num_pending + num_ack_pending); null when the partition has no consumer',
    }),
  ),
})
export const ActorHostInfo = T.Object({
  node_id: T.String(),
  last_seen: T.String(),
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
