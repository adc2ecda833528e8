import { defineFeature } from '../feature/define.ts'
import { eventsHandlers } from './handlers.ts'
import { eventRelays } from './relay.ts'
import { eventsRoutes } from './routes.ts'

/* Execution events over HTTP: `GET /api/v1/events/stream` (Server-Sent Events). */
export const eventsFeature = defineFeature({
  name: 'events',
  routes: eventsRoutes,
  service: (ctx) => {
    const relays = eventRelays({
      nc: ctx.nc,
      js: ctx.js,
      names: ctx.names,
      db: ctx.db,
      resources: ctx.resources,
      log: ctx.log.child({ mod: 'events' }),
      reconnectWindowMs: ctx.config.SSE_RECONNECT_WINDOW_SECONDS * 1000,
    })
    return { routes: eventsHandlers(relays), stop: () => relays.stopAll() }
  },
})
