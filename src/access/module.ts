import { defineFeature } from '../api/feature.ts'
import { accessHandlers } from './handlers.ts'
import { accessRoutes } from './routes.ts'

/* Users, roles, API keys and the permission reference. */
export const accessFeature = defineFeature({
  name: 'access',
  routes: accessRoutes,
  service: (ctx) => ({ routes: accessHandlers(ctx.db) }),
})
