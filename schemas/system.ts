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

/* `GET /api/v1/system/health`: the platform's services, the answering host and what needs attention. */

export const HealthStatus = T.Union([T.Literal('up'), T.Literal('down'), T.Literal('unknown')], {
  description: 'up: running; down: not running or not answering; unknown: its probe could not tell (see reason)',
})
export const HealthLevel = T.Union(
  [T.Literal('healthy'), T.Literal('degraded'), T.Literal('unhealthy'), T.Literal('unknown')],
  {
    description:
      'healthy; degraded: running with a problem (a backlog, missing containers, partitions without an owner); unhealthy: down',
  },
)
export const HealthService = T.Object(
  {
    name: T.String({ description: 'nats, postgres, then application services (actors, sandboxes, workers.<pool>, …)' }),
    kind: T.Union([T.Literal('infrastructure'), T.Literal('application')]),
    status: HealthStatus,
    health: HealthLevel,
    reason: Nullable(T.String({ description: 'why it is down, unknown or degraded' })),
    version: Nullable(T.String()),
    instances: Nullable(T.Integer({ description: 'live processes (heartbeats) or servers; null when not counted' })),
    uptime_seconds: Nullable(T.Number({ description: 'of its longest-running instance; null when not readable' })),
    cpu_percent: Nullable(
      T.Number({ description: 'summed over its processes (100 = one core), from their heartbeats; null when unknown' }),
    ),
    memory_bytes: Nullable(T.Integer({ description: 'resident memory summed over its processes; null when unknown' })),
    details: T.Record(T.String(), T.Unknown(), {
      description: "the service's own numbers (docs/operations.md#health)",
    }),
  },
  { title: 'HealthService' },
)
export type HealthService = Static<typeof HealthService>

export const HealthWarning = T.Object(
  {
    level: T.Union([T.Literal('critical'), T.Literal('warning'), T.Literal('info')]),
    service: T.Optional(T.String()),
    message: T.String(),
    value: T.Number({ description: 'what set it off (a count, a percent)' }),
    threshold: T.Number({ description: 'the limit it is compared with' }),
  },
  { title: 'HealthWarning' },
)
export type HealthWarning = Static<typeof HealthWarning>

const Percent = T.Number({ minimum: 0, maximum: 100 })
export const HealthHost = T.Object(
  {
    hostname: T.String({ description: 'the host of the process that answered (a resources role)' }),
    cpu: T.Object({
      count: T.Integer(),
      load_1m: T.Number(),
      load_5m: T.Number(),
      load_15m: T.Number(),
      used_percent: Nullable(Percent),
    }),
    memory: T.Object({ total_bytes: T.Integer(), available_bytes: T.Integer(), used_percent: Percent }),
    disk: T.Object({
      path: T.String({ description: 'DATA_DIR' }),
      total_bytes: Nullable(T.Integer()),
      available_bytes: Nullable(T.Integer()),
      used_percent: Nullable(Percent),
      error: Nullable(T.String()),
    }),
  },
  { title: 'HealthHost' },
)
export type HealthHost = Static<typeof HealthHost>

export const SystemHealth = T.Object(
  {
    status: T.Union([T.Literal('ok'), T.Literal('info'), T.Literal('warning'), T.Literal('critical')], {
      description: 'the highest level among the warnings; ok: none',
    }),
    checked_at: T.String({ format: 'date-time' }),
    duration_ms: T.Integer(),
    services: T.Array(HealthService),
    host: HealthHost,
    warnings: T.Array(HealthWarning),
  },
  { title: 'SystemHealth' },
)
export type SystemHealth = Static<typeof SystemHealth>
