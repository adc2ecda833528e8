import { scheduleActorFactory } from '../../actors/schedule/actor.ts'
import { defineFeature } from '../feature/define.ts'
import { chatService } from '../chats/service.ts'
import { scheduleConfigKind } from './config-kind.ts'
import { serveScheduleFire } from './fire.ts'
import { announceAll, scheduleHandlers, schedulePermissions } from './handlers.ts'
import { scheduleRoutes } from './routes.ts'
import { scheduleStore } from './store.ts'

/*
 * Schedules (service role): CRUD, the tick service the schedule actors call (`svc.schedules.fire`)
 * and, at start, every schedule's actor told its settings; the schedule actor.
 */
export const schedulesFeature = defineFeature({
  name: 'schedules',
  routes: scheduleRoutes,
  actors: [scheduleActorFactory],
  permissions: schedulePermissions.list,
  configKinds: (ctx) => [scheduleConfigKind(ctx)],
  service(ctx) {
    const log = ctx.log.child({ mod: 'schedules' })
    const store = scheduleStore(ctx.db)
    const chats = chatService({
      db: ctx.db,
      nc: ctx.nc,
      js: ctx.js,
      names: ctx.names,
      config: ctx.config,
      resources: ctx.resources,
      jobStore: ctx.jobs.store,
    })
    const invoke = {
      nc: ctx.nc,
      names: ctx.names,
      config: ctx.config,
      enqueue: ctx.jobs.enqueue,
      store: ctx.jobs.store,
      results: ctx.jobs.results,
    }
    const fire = serveScheduleFire({
      db: ctx.db,
      nc: ctx.nc,
      names: ctx.names,
      config: ctx.config,
      resources: ctx.resources,
      store,
      invoke,
      chats,
      log,
    })
    // in the background: a start does not wait for every schedule's message
    void announceAll({ js: ctx.js, names: ctx.names, store, log }).catch((err: unknown) =>
      log.warn({ err }, 'telling the schedule actors their settings failed; retried at the next start'),
    )
    return {
      routes: scheduleHandlers({
        nc: ctx.nc,
        js: ctx.js,
        names: ctx.names,
        store,
        resources: ctx.resources,
        chats,
        config: ctx.config,
        log,
      }),
      stop: () => fire.stop(),
    }
  },
})
