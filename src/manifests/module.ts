import { defineFeature } from '../feature/define.ts'
import { manifestHandlers } from './handlers.ts'
import { manifestRoutes } from './routes.ts'

/* The manifest status check; the manifest kind itself is src/kinds/manifest/. */
export const manifestsFeature = defineFeature({
  name: 'manifests',
  routes: manifestRoutes,
  service: (ctx) => ({ routes: manifestHandlers({ resources: ctx.resources, storeKeyProbe: ctx.storeKeyProbe }) }),
})
