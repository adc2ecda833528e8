import { defineFeature } from '../api/feature.ts'
import { agentProxy, functionProxy } from './executors.ts'
import { componentHandlers } from './handlers.ts'
import { registerComponentProxy } from './proxy-registry.ts'
import { componentRoutes } from './routes.ts'

registerComponentProxy('functions', functionProxy)
registerComponentProxy('agents', agentProxy)

/* Components: compile, render, share links, visibility and the proxies (CRUD is the resource engine's). */
export const componentsFeature = defineFeature({
  name: 'components',
  routes: componentRoutes,
  service: (ctx) => ({ routes: componentHandlers(ctx) }),
})
