import { defineFeature } from '../feature/define.ts'
import { codeSpecCheck } from './code-spec-check.ts'
import { functionHandlers, functionPermissions } from './handlers.ts'
import { functionJobExecutor } from './job-executor.ts'
import { functionRoutes } from './routes.ts'

/* Python functions: execute / execute-async, the `fn` pool's executor (sandboxes), and the saved code's check (a spec check). */
export const functionsFeature = defineFeature({
  name: 'functions',
  routes: functionRoutes,
  permissions: functionPermissions.list,
  specChecks: ({ config }) => [codeSpecCheck(config)],
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
