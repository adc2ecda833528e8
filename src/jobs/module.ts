import { defineFeature } from '../feature/define.ts'
import { jobRoutes } from './routes.ts'

/* Jobs, executions and the queue admin area; the job service itself is started by the service role (every feature enqueues through it). */
export const jobsFeature = defineFeature({
  name: 'jobs',
  routes: jobRoutes,
  service: (ctx) => ({ routes: ctx.jobs.handlers }),
})
