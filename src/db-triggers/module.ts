import { dbTriggerActorFactory } from '../../actors/db-trigger/actor.ts'
import { defineFeature } from '../feature/define.ts'
import { connectionPools } from '../data/pools.ts'
import { dbTriggerConfigKind } from './config-kind.ts'
import { announceAll, dbTriggerHandlers, dbTriggerPermissions } from './handlers.ts'
import { serveTriggerPolls } from './poll.ts'
import { dbTriggerRoutes } from './routes.ts'
import { dbTriggerStore } from './store.ts'

/*
 * Database triggers (service role): CRUD, the poll service the db-trigger actors call
 * (`svc.dbtriggers.poll`) and, at start, every trigger's actor told its settings. The actor itself
 * is this feature's too.
 */
export const dbTriggersFeature = defineFeature({
  name: 'db-triggers',
  routes: dbTriggerRoutes,
  actors: [dbTriggerActorFactory],
  permissions: dbTriggerPermissions.list,
  configKinds: (ctx) => [dbTriggerConfigKind(ctx)],
  service(ctx) {
    const log = ctx.log.child({ mod: 'db-triggers' })
    const store = dbTriggerStore(ctx.db)
    // the process's pools of database connections (the data feature subscribes them to invalidations)
    const pools = connectionPools({
      db: ctx.db,
      resources: ctx.resources,
      config: ctx.config,
      log: ctx.log.child({ mod: 'data' }),
    })
    const polls = serveTriggerPolls({
      db: ctx.db,
      nc: ctx.nc,
      names: ctx.names,
      config: ctx.config,
      resources: ctx.resources,
      pools,
      invoke: { config: ctx.config, enqueue: ctx.jobs.enqueue },
      log,
    })
    // in the background: a start does not wait for every trigger's message
    void announceAll({ js: ctx.js, names: ctx.names, store, log }).catch((err: unknown) =>
      log.warn({ err }, 'telling the database trigger actors their settings failed; retried at the next start'),
    )
    return {
      routes: dbTriggerHandlers({
        js: ctx.js,
        names: ctx.names,
        store,
        resources: ctx.resources,
        pools,
        config: ctx.config,
        log,
      }),
      stop: () => polls.stop(),
    }
  },
})
