import { defineFeature } from '../api/feature.ts'
import { KINDS } from '../kinds/index.ts'
import { resourceHandlers } from './handlers.ts'
import { resourceRoutes } from './routes.ts'

/* CRUD of every registered resource kind (src/kinds/index.ts), written once by the engine. */
export const resourcesFeature = defineFeature({
  name: 'resources',
  routes: () => KINDS.flatMap(resourceRoutes),
  service: (ctx) => ({ routes: resourceHandlers(ctx.resources) }),
})
