import { defineFeature } from '../api/feature.ts'
import { dependencyHandlers } from './handlers.ts'
import { dependencyRoutes } from './routes.ts'

/* Python packages users request and admins approve. */
export const dependenciesFeature = defineFeature({
  name: 'dependencies',
  routes: dependencyRoutes,
  service: (ctx) => ({ routes: dependencyHandlers({ db: ctx.db, config: ctx.config }) }),
})
