import { defineFeature } from '../feature/define.ts'
import { permissionReference } from '../feature/permissions.ts'
import { roleConfigKind, userConfigKind } from './config-kinds.ts'
import { accessHandlers, accessPermissions } from './handlers.ts'
import { accessRoutes } from './routes.ts'

/* Users, roles, API keys and the permission reference. */
export const accessFeature = defineFeature({
  name: 'access',
  routes: accessRoutes,
  permissions: accessPermissions.list,
  configKinds: (ctx) => [roleConfigKind(ctx), userConfigKind(ctx)],
  service: (ctx) => ({
    routes: accessHandlers(ctx.db, () => permissionReference([...ctx.resources.kinds.values()], ctx.permissions)),
  }),
})
