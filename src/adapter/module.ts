import { defineFeature } from '../feature/define.ts'
import { adapterHandlers } from './handlers.ts'
import { adapterPermissions } from './providers.ts'
import { adapterRoutes } from './routes.ts'

/* The OpenAI-compatible adapter under /adapters/openai/v1. */
export const adapterFeature = defineFeature({
  name: 'adapter',
  routes: adapterRoutes,
  permissions: adapterPermissions.list,
  service: (ctx) => ({
    routes: adapterHandlers({
      db: ctx.db,
      nc: ctx.nc,
      js: ctx.js,
      names: ctx.names,
      config: ctx.config,
      resources: ctx.resources,
      jobStore: ctx.jobs.store,
      actorsHere: ctx.actorsHere,
      log: ctx.log.child({ mod: 'adapter' }),
    }),
  }),
})
