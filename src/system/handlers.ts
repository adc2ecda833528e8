import { cancelDrain, openShards, requestDrain } from '../../actors/runtime/shards.ts'
import { bind, type BoundRoute } from '../api/bind.ts'
import { permissionSet } from '../feature/permissions.ts'
import { can, type Principal } from '../auth/principal.ts'
import { conflict, forbidden, notFound } from '../kernel/errors.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import type { ServiceBase } from '../feature/define.ts'
import type { HealthSource } from '../feature/health.ts'
import { activeHosts, actorHost, actorHosts, actorShards } from './actors-view.ts'
import { systemHealth } from './health.ts'
import { SYSTEM_ROUTES as R } from './routes.ts'

/** The permissions this module checks, for the reference (its feature contributes the list). */
export const systemPermissions = permissionSet()

const SYSTEM_READ = systemPermissions.add(
  'platform.system.read:all',
  'System: read containers, workers and health (admin)',
)
const SYSTEM_UPDATE = systemPermissions.add(
  'platform.system.update:all',
  'System: drain and resume actor hosts, flush stuck jobs, restart containers (admin)',
)

const need = (p: Principal, permission: string): void => {
  if (!can(p, permission)) throw forbidden(`requires ${permission}`, 'auth.admin_only')
}

/*
 * The operators' view and the drain, bound: admins only (`platform.system.read:all` to read,
 * `platform.system.update:all` to drain), from NATS alone. A drain is a key in ACTOR_SHARDS the
 * host reads every tick (actors/runtime/shards.ts says why a key and not a request to the host).
 */
export function systemHandlers(d: {
  nc: NatsConnection
  names: NatsNames
  base: ServiceBase
  healthChecks: readonly HealthSource[]
}): BoundRoute[] {
  return [
    bind(R.report, async ({ principal: p }) => {
      need(p, SYSTEM_READ)
      return { body: await systemHealth({ base: d.base, checks: d.healthChecks }) }
    }),
    bind(R.actors, async ({ principal: p }) => {
      need(p, SYSTEM_READ)
      return { body: await actorShards(d.nc, d.names) }
    }),
    bind(R.actorHosts, async ({ principal: p }) => {
      need(p, SYSTEM_READ)
      return { body: await actorHosts(d.nc, d.names) }
    }),
    bind(R.drainHost, async ({ principal: p, params }) => {
      need(p, SYSTEM_UPDATE)
      const host = await actorHost(d.nc, d.names, params.node_id)
      if (host === null || host.state === 'gone') throw notFound(`no live actor host ${params.node_id}`)
      if (host.state === 'active') {
        // the last host taking a share would leave every partition without an owner
        const others = (await activeHosts(d.nc, d.names)).filter((id) => id !== params.node_id)
        if (others.length === 0)
          throw conflict(`${params.node_id} is the only active actor host: nothing could take its partitions over`)
      }
      const req = await requestDrain(await openShards(d.nc, d.names), params.node_id, p.userId)
      return {
        body: {
          node_id: params.node_id,
          state: host.state === 'drained' ? 'drained' : 'draining',
          drain_requested_at: req.requested_at,
        },
      }
    }),
    bind(R.undrainHost, async ({ principal: p, params }) => {
      need(p, SYSTEM_UPDATE)
      const host = await actorHost(d.nc, d.names, params.node_id)
      if (host === null || host.state === 'gone') throw notFound(`no live actor host ${params.node_id}`)
      await cancelDrain(await openShards(d.nc, d.names), params.node_id)
      return { body: { node_id: params.node_id, state: 'active', drain_requested_at: null } }
    }),
  ]
}
