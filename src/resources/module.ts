import { defineFeature } from '../feature/define.ts'
import { resourceHandlers } from './handlers.ts'
import { resourceRoutes } from './routes.ts'

/* CRUD of every feature's resource kinds (their `kinds`), written once by the engine. */
export const resourcesFeature = defineFeature({
  name: 'resources',
  routes: ({ kinds }) => kinds.flatMap(resourceRoutes),
  service: (ctx) => ({ routes: resourceHandlers(ctx.resources, ctx.recordDecorators) }),
})
