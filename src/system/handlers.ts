import { bind, type BoundRoute } from '../api/bind.ts'
import { permissionSet } from '../feature/permissions.ts'
import { can } from '../auth/principal.ts'
import { forbidden } from '../kernel/errors.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { actorShards } from './actors-view.ts'
import { SYSTEM_ROUTES as R } from './routes.ts'

/** The permissions this module checks, for the reference (its feature contributes the list). */
export const systemPermissions = permissionSet()

const SYSTEM_READ = systemPermissions.add(
  'platform.system.read:all',
  'System: read containers, workers and health (admin)',
)

/* The operators' view, bound: admins only (`platform.system.read:all`), read from NATS alone. */
export function systemHandlers(d: { nc: NatsConnection; names: NatsNames }): BoundRoute[] {
  return [
    bind(R.actors, async ({ principal: p }) => {
      if (!can(p, SYSTEM_READ)) throw forbidden(`requires ${SYSTEM_READ}`, 'auth.admin_only')
      return { body: await actorShards(d.nc, d.names) }
    }),
  ]
}
