import { defineFeature } from '../feature/define.ts'
import { discoveryHandlers } from './handlers.ts'
import { discoveryRoutes } from './routes.ts'

/* GET /discovery/{type}: what the caller can see, optionally narrowed to an application. */
export const discoveryFeature = defineFeature({
  name: 'discovery',
  routes: discoveryRoutes,
  service: (ctx) => ({ routes: discoveryHandlers({ resources: ctx.resources }) }),
})
