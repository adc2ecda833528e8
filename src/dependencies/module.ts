import { defineFeature } from '../feature/define.ts'
import { dependencyHandlers, dependencyPermissions } from './handlers.ts'
import { dependencyRoutes } from './routes.ts'

/* Python packages users request and admins approve. */
export const dependenciesFeature = defineFeature({
  name: 'dependencies',
  routes: dependencyRoutes,
  permissions: dependencyPermissions.list,
  service: (ctx) => ({ routes: dependencyHandlers({ db: ctx.db, config: ctx.config }) }),
})
