import { Type as T } from '@sinclair/typebox'
import { DlqEntry, ExecutionRecord, JobRecord, QueueStats, WorkerRecord } from '../../schemas/job.ts'
import {
  DlqFlushed,
  DlqRetried,
  ExecutionParams,
  ExecutionsQuery,
  JobCancelled,
  JobParams,
  JobResult,
  QueueJobsQuery,
  StuckJobsFlushed,
} from '../../schemas/jobs-api.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'

/* The job, execution and queue admin endpoints. */
const rpc = { auth: true as const, target: 'rpc' as const }
const runtime = { ...rpc, surface: 'runtime' as const, tags: ['Jobs'] }
const admin = { ...rpc, surface: 'management' as const, tags: ['Queue'] }

export const JOB_ROUTES = {
  jobsGet: defineRoute({
    ...runtime,
    id: 'jobs.get',
    method: 'GET',
    path: '/jobs/{job_id}',
    summary: 'Status of a job (own jobs; admins all)',
    params: JobParams,
    response: JobRecord,
    errors: [404],
  }),
  jobsResult: defineRoute({
    ...runtime,
    id: 'jobs.result',
    method: 'GET',
    path: '/jobs/{job_id}/result',
    summary: 'Output of a completed job (409 while it has not completed)',
    params: JobParams,
    response: JobResult,
    errors: [404, 409],
  }),
  executionsGet: defineRoute({
    ...runtime,
    id: 'executions.get',
    method: 'GET',
    path: '/executions/{execution_id}',
    summary: 'Execution record (own executions; admins all)',
    params: ExecutionParams,
    response: ExecutionRecord,
    errors: [404],
  }),
  executionsList: defineRoute({
    ...runtime,
    id: 'executions.list',
    method: 'GET',
    path: '/executions',
    summary:
      'Recent executions, newest first, filtered by what ran (kind, namespace, name) and status (own executions; admins all)',
    query: ExecutionsQuery,
    response: T.Array(ExecutionRecord),
  }),
  queueCancel: defineRoute({
    ...admin,
    id: 'queue.cancel',
    method: 'POST',
    path: '/api/v1/queue/jobs/{job_id}/cancel',
    summary: 'Cancel a queued or running job (admin); waiters unblock, running sandboxes are not killed',
    params: JobParams,
    response: JobCancelled,
    errors: [403, 404, 409],
  }),
  systemFlushStuckJobs: defineRoute({
    ...admin,
    tags: ['System'],
    id: 'system.flush-stuck-jobs',
    method: 'POST',
    path: '/api/v1/system/flush-stuck-jobs',
    summary: 'Cancel jobs running for more than STUCK_JOB_HOURS (admin)',
    response: StuckJobsFlushed,
    errors: [403],
  }),
  queueStats: defineRoute({
    ...admin,
    id: 'queue.stats',
    method: 'GET',
    path: '/api/v1/queue/stats',
    summary: 'Backlog per pool, job counts (24 h), DLQ size, live workers (admin)',
    response: QueueStats,
    errors: [403],
  }),
  queueJobs: defineRoute({
    ...admin,
    id: 'queue.jobs',
    method: 'GET',
    path: '/api/v1/queue/jobs',
    summary: 'Recent jobs, newest first (admin)',
    query: QueueJobsQuery,
    response: T.Array(ExecutionRecord),
    errors: [403],
  }),
  queueDlqList: defineRoute({
    ...admin,
    id: 'queue.dlq.list',
    method: 'GET',
    path: '/api/v1/queue/dlq',
    summary: 'Jobs in the dead letter queue (admin)',
    response: T.Array(DlqEntry),
    errors: [403],
  }),
  queueDlqRetry: defineRoute({
    ...admin,
    id: 'queue.dlq.retry',
    method: 'POST',
    path: '/api/v1/queue/dlq/{job_id}/retry',
    summary: 'Enqueue a dead-lettered job again as a new job (admin)',
    params: JobParams,
    response: DlqRetried,
    status: 202,
    errors: [403, 404],
  }),
  queueDlqFlush: defineRoute({
    ...admin,
    id: 'queue.dlq.flush',
    method: 'POST',
    path: '/api/v1/queue/dlq/flush',
    summary: 'Drop every job in the dead letter queue (admin)',
    response: DlqFlushed,
    errors: [403],
  }),
  queueWorkers: defineRoute({
    ...admin,
    id: 'queue.workers',
    method: 'GET',
    path: '/api/v1/queue/workers',
    summary: 'Live workers from their heartbeats (admin)',
    response: T.Array(WorkerRecord),
    errors: [403],
  }),
}

export function jobRoutes(): RouteDef[] {
  return Object.values(JOB_ROUTES)
}
