import type { KV } from '@nats-io/kv'
import type { HealthService } from '../../schemas/system.ts'
import { listMembers } from '../platform/heartbeat.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { actorShards } from './actors-view.ts'
import { processTotals, serviceRow } from '../feature/health.ts'

/*
 * The actor hosts as one service (`actors`), from the operators' view of the shards
 * (actors-view.ts): hosts beating (active or draining), every type's partitions and those
 * without an owner — normal for a lease TTL after a host died, a problem when it lasts.
 */
export async function actorsService(d: { nc: NatsConnection; names: NatsNames; workers: KV }): Promise<HealthService> {
  const [view, members] = await Promise.all([actorShards(d.nc, d.names), listMembers(d.workers, 'actors')])
  const live = view.hosts.filter((h) => h.state !== 'gone')
  const partitions = view.types.reduce((a, t) => a + t.partitions, 0)
  const unowned = view.types.reduce((a, t) => a + t.partitions - t.owned, 0)
  const { processes: _p, ...usage } = processTotals(members)
  return serviceRow({
    name: 'actors',
    kind: 'application',
    status: live.length > 0 ? 'up' : 'down',
    health: live.length === 0 ? 'unhealthy' : unowned > 0 ? 'degraded' : 'healthy',
    reason:
      live.length === 0 ? 'no live actor host' : unowned > 0 ? `${String(unowned)} partitions without an owner` : null,
    instances: live.length,
    ...usage,
    details: {
      hosts: view.hosts.map((h) => ({
        node_id: h.node_id,
        state: h.state,
        partitions: h.partitions,
        last_seen: h.last_seen,
      })),
      active_hosts: view.hosts.filter((h) => h.state === 'active').length,
      partitions,
      unowned_partitions: unowned,
      backlog: view.types.reduce((a, t) => a + t.backlog, 0),
      lease_ttl_ms: view.lease_ttl_ms,
    },
  })
}
