import { defineFeature } from '../feature/define.ts'
import { documentLimits } from './document-limits.ts'
import { packageHandlers, packagePermissions } from './packages-handlers.ts'
import { packageRoutes } from './packages-routes.ts'
import { createApplier } from './apply.ts'

/* Installable packages (docs/gitops.md#packages), over the apply engine of declarative config. */
export const packagesFeature = defineFeature({
  name: 'packages',
  routes: packageRoutes,
  permissions: packagePermissions.list,
  service: (ctx) => ({
    routes: packageHandlers({
      db: ctx.db,
      resources: ctx.resources,
      applier: createApplier(ctx, []),
      limits: documentLimits(ctx.config),
      log: ctx.log,
    }),
  }),
})
