import { defineFeature } from '../feature/define.ts'
import { dependencyConfigKind } from './config-kind.ts'
import { dependencyHandlers, dependencyPermissions } from './handlers.ts'
import { dependencyRoutes } from './routes.ts'

/* Python packages users request and admins approve. */
export const dependenciesFeature = defineFeature({
  name: 'dependencies',
  routes: dependencyRoutes,
  permissions: dependencyPermissions.list,
  configKinds: (ctx) => [dependencyConfigKind(ctx)],
  service: (ctx) => ({ routes: dependencyHandlers({ db: ctx.db, config: ctx.config }) }),
})
