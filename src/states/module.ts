import { defineFeature } from '../feature/define.ts'
import { statePermissions } from './access.ts'
import { stateProxy } from './component-proxy.ts'
import { stateHandlers } from './handlers.ts'
import { stateRoutes } from './routes.ts'
import { createStateService } from './service.ts'
import { startStateSweep } from './sweep.ts'
import { stateToolProvider } from './tools.ts'

/*
 * Stores' state entries: the `/stores/{ns}/{name}/states` routes and the expired-entry sweep
 * (service role), and the agent tools `list_state_keys`, `retrieve_state`, `save_state`,
 * `delete_state` (offered by the chat turns; they run in the workers role). The `store` kind
 * itself is in src/kinds/store/. The service part also answers the manifest status's store-key
 * question (`src/feature/store-key-probe.ts`) with the same service, so a `store_dependencies`
 * entry with a `key` is checked as the caller would read it.
 */
export const statesFeature = defineFeature({
  name: 'states',
  routes: stateRoutes,
  tools: [stateToolProvider],
  componentProxies: { states: stateProxy }, // components' enabled_stores
  permissions: statePermissions.list,
  service: (ctx) => {
    const states = createStateService({
      db: ctx.db,
      config: ctx.config,
      resources: ctx.resources,
      nats: { nc: ctx.nc, names: ctx.names },
    })
    return {
      routes: stateHandlers(states),
      stop: startStateSweep(states, ctx.config.STATE_SWEEP_INTERVAL_SECONDS, ctx.log.child({ mod: 'states' })),
      storeKeyProbe: (p, store, key) => states.has(p, store, key),
    }
  },
})
