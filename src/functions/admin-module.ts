import { defineFeature } from '../api/feature.ts'
import { installApprovedPackages } from '../dependencies/installer.ts'
import { sandboxAdminHandlers, sandboxAdminRoutes } from './admin.ts'

/* Containers and shared workers administration, answered for the whole platform over sandbox.ctl. */
export const sandboxAdminFeature = defineFeature({
  name: 'sandbox-admin',
  routes: sandboxAdminRoutes,
  service(ctx) {
    const log = ctx.log.child({ mod: 'dependencies' })
    const installPackages = async () => {
      const r = await installApprovedPackages({ db: ctx.db, config: ctx.config, log })
      return { dir: r.dir, failed: r.failed.length }
    }
    return { routes: sandboxAdminHandlers({ db: ctx.db, nc: ctx.nc, names: ctx.names, installPackages }) }
  },
})
