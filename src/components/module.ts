import { defineFeature } from '../feature/define.ts'
import { agentProxy, functionProxy } from './executors.ts'
import { componentHandlers } from './handlers.ts'
import { componentRoutes } from './routes.ts'

/* Components: compile, render, share links, visibility and the proxies (CRUD is the resource engine's). */
export const componentsFeature = defineFeature({
  name: 'components',
  routes: componentRoutes,
  componentProxies: { functions: functionProxy, agents: agentProxy },
  service: (ctx) => ({ routes: componentHandlers(ctx) }),
})
