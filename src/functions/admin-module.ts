import { defineFeature } from '../api/feature.ts'
import { installApprovedPackages } from '../dependencies/installer.ts'
import { sandboxAdminHandlers, sandboxAdminRoutes } from './admin.ts'

/* Containers and shared workers administration: messages to the pool actors, answers from the worker processes' heartbeats and reports. */
export const sandboxAdminFeature = defineFeature({
  name: 'sandbox-admin',
  routes: sandboxAdminRoutes,
  service(ctx) {
    const log = ctx.log.child({ mod: 'dependencies' })
    const installPackages = async () => {
      const r = await installApprovedPackages({ db: ctx.db, config: ctx.config, log })
      return { dir: r.dir, failed: r.failed.length }
    }
    return {
      routes: sandboxAdminHandlers({
        db: ctx.db,
        nc: ctx.nc,
        js: ctx.js,
        names: ctx.names,
        config: ctx.config,
        installPackages,
      }),
    }
  },
})
