import { defineFeature } from '../feature/define.ts'
import { jobRoutes } from './routes.ts'
import { JOB_PERMISSIONS } from './service.ts'

/* Jobs, executions and the queue admin area; the job service itself is started by the service role (every feature enqueues through it). */
export const jobsFeature = defineFeature({
  name: 'jobs',
  routes: jobRoutes,
  permissions: [
    {
      permission: JOB_PERMISSIONS.readAll,
      description: 'read the queue admin area (stats, jobs, DLQ, workers) and every job',
    },
    { permission: JOB_PERMISSIONS.updateAll, description: 'cancel jobs, retry and flush the DLQ' },
    { permission: JOB_PERMISSIONS.systemUpdate, description: 'system maintenance (flush stuck jobs)' },
  ],
  service: (ctx) => ({ routes: ctx.jobs.handlers }),
})
