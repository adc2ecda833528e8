import { defineFeature } from '../api/feature.ts'
import { namespaceHandlers } from './handlers.ts'
import { namespaceRoutes } from './routes.ts'

/* Namespaces, their owners and members. */
export const namespacesFeature = defineFeature({
  name: 'namespaces',
  routes: namespaceRoutes,
  service: (ctx) => ({ routes: namespaceHandlers(ctx.db) }),
})
