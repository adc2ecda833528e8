import { defineFeature } from '../feature/define.ts'
import { createApplier } from './apply.ts'
import { configHandlers, configPermissions } from './handlers.ts'
import { configRoutes } from './routes.ts'

/*
 * Declarative config (docs/gitops.md): the apply engine over every kind config carries (the
 * generic resource kinds' adapter and the features' `configKinds`) and the `/api/v1/config`
 * routes. Applying CONFIG_FILE at start (AUTO_APPLY_CONFIG) is the resource role's (auto-apply.ts).
 */
export const configFeature = defineFeature({
  name: 'config',
  routes: configRoutes,
  permissions: configPermissions.list,
  service: (ctx) => ({ routes: configHandlers(ctx, createApplier(ctx, [...ctx.configKinds()])) }),
})
