import { defineFeature } from '../feature/define.ts'
import { functionHandlers, functionPermissions } from './handlers.ts'
import { functionJobExecutor } from './job-executor.ts'
import { functionRoutes } from './routes.ts'

/* Python functions: execute / execute-async, and the `fn` pool's executor (sandboxes). */
export const functionsFeature = defineFeature({
  name: 'functions',
  routes: functionRoutes,
  permissions: functionPermissions.list,
  service: (ctx) => ({
    routes: functionHandlers({
      db: ctx.db,
      nc: ctx.nc,
      names: ctx.names,
      config: ctx.config,
      resources: ctx.resources,
      jobs: ctx.jobs,
      log: ctx.log.child({ mod: 'functions' }),
    }),
  }),
  workers: (ctx) => ({
    executors: { fn: functionJobExecutor({ resources: ctx.resources, config: ctx.config, sandboxes: ctx.sandboxes }) },
  }),
})
