import { defineFeature } from '../feature/define.ts'
import { systemRoutes } from '../api/system-routes.ts'

/* The gateway's own routes (/health): no service part. */
export const systemFeature = defineFeature({ name: 'system', routes: systemRoutes })
