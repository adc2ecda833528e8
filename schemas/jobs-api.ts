import { Type as T } from '@sinclair/typebox'
import { Name, Namespace, Uuid } from './common.ts'
import { JobStatus } from './job.ts'

/* Params, queries and answers of the job, execution and queue admin routes; the records are in job.ts. */
export const JobParams = T.Object({ job_id: Uuid })
export const ExecutionParams = T.Object({ execution_id: Uuid })
export const JobResult = T.Unknown({ description: "the function's output" })
export const JobCancelled = T.Object({ status: T.Literal('cancelled'), job_id: Uuid })
export const StuckJobsFlushed = T.Object({ flushed: T.Integer(), job_ids: T.Array(Uuid) })
export const QueueJobsQuery = T.Object({
  status: T.Optional(JobStatus),
  limit: T.Optional(T.Integer({ minimum: 1, maximum: 1000, default: 100 })),
  offset: T.Optional(T.Integer({ minimum: 0, default: 0 })),
})
export const ExecutionsQuery = T.Object({
  kind: T.Optional(T.String({ maxLength: 64, description: 'what ran: `function`, `agent`, …' })),
  namespace: T.Optional(Namespace),
  name: T.Optional(Name),
  status: T.Optional(JobStatus),
  limit: T.Optional(T.Integer({ minimum: 1, maximum: 200, default: 50 })),
  offset: T.Optional(T.Integer({ minimum: 0, maximum: 10_000, default: 0 })),
})
export const DlqRetried = T.Object({ status: T.Literal('queued'), job_id: Uuid, retry_of: Uuid })
export const DlqFlushed = T.Object({ flushed: T.Integer() })
