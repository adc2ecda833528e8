import { defineFeature } from './feature.ts'
import { systemRoutes } from './system-routes.ts'

/* The gateway's own routes (/health): no service part. */
export const systemFeature = defineFeature({ name: 'system', routes: systemRoutes })
