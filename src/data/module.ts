import { defineFeature } from '../feature/define.ts'
import { databaseConnectionKind } from '../kinds/database-connection/kind.ts'
import { queryProxy } from './component-proxy.ts'
import type { ResourceService } from '../resources/service.ts'
import { DEFAULT_PORTS } from './drivers/types.ts'
import { dataHandlers, warnAboutRole } from './handlers.ts'
import { platformDatabaseOf } from './platform-database.ts'
import { provideSaveChecks } from './save-checks.ts'
import { announceInvalidation, connectionPools, subscribeInvalidations } from './pools.ts'
import { dataRoutes } from './routes.ts'
import { queryPermissions } from './execute.ts'
import { queryTools } from './tools.ts'

/**
 * What the save and use checks need from the running platform: a connection's type (a query's SQL
 * is checked as Postgres on Postgres connections) and the platform's own database (the roles'
 * context carries the URL the platform connected with, the local cluster's too).
 */
function provideChecks(ctx: { resources: ResourceService }): void {
  // both roles' contexts spread the infrastructure, whose databaseUrl the feature types do not name
  const url = (ctx as { databaseUrl?: string }).databaseUrl
  provideSaveChecks({
    connectionTypeOf: async (id) => (await ctx.resources.byId(databaseConnectionKind, id))?.connection_type ?? null,
    platformDatabase: platformDatabaseOf(url),
    defaultPort: (type) => DEFAULT_PORTS[type],
  })
}

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
  service: (ctx) => {
    const log = ctx.log.child({ mod: 'data' })
    provideChecks(ctx)
    const pools = connectionPools({ db: ctx.db, resources: ctx.resources, config: ctx.config, log })
    const sub = subscribeInvalidations(ctx.nc, ctx.names, pools)
    // every committed change of a connection, whatever wrote it (API, config apply, packages)
    const deps = { db: ctx.db, config: ctx.config, resources: ctx.resources, pools, log }
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
    provideChecks(ctx)
    // the pools agent turns use: opened with this role's logger, told about changes like the service's
    subscribeInvalidations(
      ctx.nc,
      ctx.names,
      connectionPools({
        db: ctx.db,
        resources: ctx.resources,
        config: ctx.config,
        log: ctx.log.child({ mod: 'data' }),
      }),
    )
    return {}
  },
})
