import { defineFeature } from '../feature/define.ts'
import { databaseConnectionKind } from '../kinds/database-connection/kind.ts'
import { queryProxy } from './component-proxy.ts'
import { dataHandlers, warnAboutRole } from './handlers.ts'
import { platformDatabaseOf } from './platform-database.ts'
import { saveCheckDeps, saveChecks } from './save-checks.ts'
import { announceInvalidation, connectionPools, subscribeInvalidations } from './pools.ts'
import { dataRoutes } from './routes.ts'
import { queryPermissions } from './execute.ts'
import { queryTools } from './tools.ts'

/**
 * The platform's own database, which the use checks (connection tests, pools) compare a connection
 * with: both roles' contexts spread the infrastructure, whose databaseUrl (the local cluster's
 * too) the feature types do not name. The save checks get it from their context (`specChecks`).
 */
const platformDatabaseIn = (ctx: object) => platformDatabaseOf((ctx as { databaseUrl?: string }).databaseUrl)

/*
 * Database connections and queries: connection tests, query execution, the
 * per-process connection pools and their invalidation over NATS, and queries as agent tools.
 * CRUD of both kinds comes from the resource engine (src/kinds/database-connection, src/kinds/query).
 */
export const dataFeature = defineFeature({
  name: 'data',
  routes: dataRoutes,
  tools: [queryTools], // agents' enabled_queries
  componentProxies: { queries: queryProxy }, // components' enabled_queries
  permissions: queryPermissions.list,
  // a query's SQL on a Postgres connection, a connection leading to the platform's own database
  specChecks: (ctx) => [saveChecks(saveCheckDeps(ctx))],
  service: (ctx) => {
    const log = ctx.log.child({ mod: 'data' })
    const platformDatabase = platformDatabaseIn(ctx)
    const pools = connectionPools({ db: ctx.db, resources: ctx.resources, config: ctx.config, log, platformDatabase })
    const sub = subscribeInvalidations(ctx.nc, ctx.names, pools)
    // every committed change of a connection, whatever wrote it (API, config apply, packages)
    const deps = { db: ctx.db, config: ctx.config, resources: ctx.resources, pools, log, platformDatabase }
    const unlisten = ctx.resources.onChange((c) => {
      if (c.kind !== databaseConnectionKind.kind) return
      if (c.action !== 'created') announceInvalidation(ctx.nc, ctx.names, c.id)
      // a superuser (or server-file) role is worth a warning when saved, not only when tested
      if (c.action !== 'deleted') void warnAboutRole(deps, c.id)
    })
    return {
      routes: dataHandlers(deps),
      stop: async () => {
        unlisten()
        sub.stop()
        await pools.closeAll()
      },
    }
  },
  workers: (ctx) => {
    // the pools agent turns use: opened with this role's logger, told about changes like the service's
    subscribeInvalidations(
      ctx.nc,
      ctx.names,
      connectionPools({
        db: ctx.db,
        resources: ctx.resources,
        config: ctx.config,
        log: ctx.log.child({ mod: 'data' }),
        platformDatabase: platformDatabaseIn(ctx),
      }),
    )
    return {}
  },
})
