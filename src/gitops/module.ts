import { defineFeature } from '../feature/define.ts'
import { createApplier } from './apply.ts'
import { documentLimits } from './document-limits.ts'
import { configHandlers, configPermissions } from './handlers.ts'
import { packageHandlers, packagePermissions } from './packages-handlers.ts'
import { packageRoutes } from './packages-routes.ts'
import { configRoutes } from './routes.ts'

/*
 * Declarative config and installable packages (docs/gitops.md): the apply engine over every kind
 * config carries (the generic resource kinds' adapter and the features' `configKinds`), the
 * `/api/v1/config` routes and the `/api/v1/packages` routes, both over the one applier. Applying
 * CONFIG_FILE at start (AUTO_APPLY_CONFIG) is the resource role's (auto-apply.ts).
 */
export const configFeature = defineFeature({
  name: 'config',
  routes: () => [...configRoutes(), ...packageRoutes()],
  permissions: [...configPermissions.list, ...packagePermissions.list],
  service: (ctx) => {
    const applier = createApplier(ctx, [...ctx.configKinds()])
    return {
      routes: [
        ...configHandlers(ctx, applier),
        ...packageHandlers({
          db: ctx.db,
          resources: ctx.resources,
          applier,
          limits: documentLimits(ctx.config),
          log: ctx.log.child({ mod: 'packages' }),
        }),
      ],
    }
  },
})
