import { defineFeature } from '../feature/define.ts'
import { declaredNamespacePermissions, namespaceHandlers } from './handlers.ts'
import { namespaceRoutes } from './routes.ts'

/* Namespaces, their owners and members. */
export const namespacesFeature = defineFeature({
  name: 'namespaces',
  routes: namespaceRoutes,
  permissions: declaredNamespacePermissions.list,
  service: (ctx) => ({ routes: namespaceHandlers(ctx.db) }),
})
