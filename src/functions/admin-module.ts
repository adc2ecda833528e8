import { poolActorFactory } from '../../actors/pool/actor.ts'
import { defineFeature } from '../feature/define.ts'
import { installApprovedPackages } from '../dependencies/installer.ts'
import { sandboxAdminHandlers, sandboxAdminPermissions, sandboxAdminRoutes } from './admin.ts'
import { sandboxHealth } from './health.ts'

/*
 * Containers and shared workers administration: the pool actors, messages to them, answers from
 * the worker processes' heartbeats and reports, and the sandboxes' row in the system health.
 */
export const sandboxAdminFeature = defineFeature({
  name: 'sandbox-admin',
  routes: sandboxAdminRoutes,
  actors: [poolActorFactory],
  permissions: sandboxAdminPermissions.list,
  health: sandboxHealth,
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
