import { defineFeature } from '../feature/define.ts'
import { systemHandlers, systemPermissions } from './handlers.ts'
import { systemRoutes } from './routes.ts'

/*
 * The platform about itself: `/health` (answered by the gateway itself), the platform's health
 * (`/api/v1/system/health`: services, host, warnings; other features add theirs with `health`) and
 * the operators' view of every actor type's shards (service role).
 */
export const systemFeature = defineFeature({
  name: 'system',
  routes: systemRoutes,
  permissions: systemPermissions.list,
  service: (ctx) => ({
    routes: systemHandlers({ nc: ctx.nc, names: ctx.names, base: ctx, healthChecks: ctx.healthChecks }),
  }),
})
