import { defineFeature } from '../api/feature.ts'
import { registerToolProvider } from '../chats/tools.ts'
import { registerComponentProxy } from '../components/proxy-registry.ts'
import { registerStoreKeyProbe } from '../manifests/store-keys.ts'
import { stateProxy } from './component-proxy.ts'
import { stateHandlers } from './handlers.ts'
import { stateRoutes } from './routes.ts'
import { createStateService } from './service.ts'
import { startStateSweep } from './sweep.ts'
import { stateToolProvider } from './tools.ts'

/*
 * Stores' state entries: the `/stores/{ns}/{name}/states` routes and the expired-entry sweep
 * (service role), and the agent tools `list_state_keys`, `retrieve_state`, `save_state`,
 * `delete_state` (registered with the chats' tool providers; they run in the workers role).
 * The `store` kind itself is in src/kinds/store/. The service role also answers the manifest
 * status's store-key question (`src/manifests/store-keys.ts`) with the same service, so a
 * `store_dependencies` entry with a `key` is checked as the caller would read it.
 */
registerToolProvider(stateToolProvider)
registerComponentProxy('states', stateProxy) // components' enabled_stores

export const statesFeature = defineFeature({
  name: 'states',
  routes: stateRoutes,
  service: (ctx) => {
    const states = createStateService({
      db: ctx.db,
      config: ctx.config,
      resources: ctx.resources,
      nats: { nc: ctx.nc, names: ctx.names },
    })
    registerStoreKeyProbe((p, store, key) => states.has(p, store, key))
    return {
      routes: stateHandlers(states),
      stop: startStateSweep(states, ctx.config.STATE_SWEEP_INTERVAL_SECONDS, ctx.log.child({ mod: 'states' })),
    }
  },
})
