import { Type as T } from '@sinclair/typebox'
import { Nullable, Uuid } from './common.ts'

/* Wire shapes of jobs, executions and the queue admin endpoints (WIRE.md "Functions and executions"). */
export const JobStatus = T.Union(['scheduled', 'queued', 'running', 'completed', 'failed', 'cancelled'].map((s) => T.Literal(s)), { description: 'job status' })

/**
 * How a job failed, as the job state carries it: `code` is a registered error code
 * (`function.error`, `function.timeout`, `job.timeout`, …) that callers decide on, `type` the
 * Python exception type for function errors ('' otherwise), `message` the text. The API's
 * `error` fields stay text: `jobErrorText` (src/jobs/job-state.ts) renders `type: message`.
 */
export const JobError = T.Object(
  { code: T.String(), type: T.String({ description: "Python exception type for function errors, '' otherwise" }), message: T.String() },
  { title: 'JobError' },
)

export const JobRecord = T.Object(
  {
    job_id: Uuid,
    execution_id: Uuid,
    status: JobStatus,
    pool: T.String({ description: 'fn | agent | subagent' }),
    kind: T.String(),
    namespace: T.String(),
    name: T.String(),
    attempts: T.Integer(),
    error: Nullable(T.String()),
    created_at: T.String(),
    started_at: Nullable(T.String()),
    finished_at: Nullable(T.String()),
    due_at: T.Optional(T.String()),
  },
  { title: 'Job' },
)

export const ExecutionRecord = T.Object(
  {
    execution_id: Uuid,
    function: T.Object({ namespace: T.String(), name: T.String() }),
    kind: T.String(),
    pool: T.String(),
    trigger_type: T.String(),
    trigger_id: T.String(),
    chat_id: Nullable(T.String()),
    parent_id: Nullable(Uuid),
    user_id: Nullable(Uuid),
    status: JobStatus,
    attempts: T.Integer(),
    input_data: T.Unknown(),
    output_data: T.Unknown(),
    error: Nullable(T.String()),
    retry_of: Nullable(Uuid),
    created_at: T.String(),
    started_at: Nullable(T.String()),
    finished_at: Nullable(T.String()),
    duration_ms: Nullable(T.Integer()),
    callback_status: Nullable(T.String()),
    callback_response_code: Nullable(T.Integer()),
  },
  { title: 'Execution' },
)

export const QueueStats = T.Object(
  {
    queues: T.Object({
      functions: T.Object({ pending: T.Integer(), executing: T.Integer() }),
      agents: T.Object({ pending: T.Integer(), executing: T.Integer() }),
      subagents: T.Object({ pending: T.Integer(), executing: T.Integer() }),
    }),
    jobs: T.Object({ scheduled: T.Integer(), queued: T.Integer(), running: T.Integer(), completed: T.Integer(), failed: T.Integer(), cancelled: T.Integer() }),
    dlq: T.Object({ size: T.Integer() }),
    workers: T.Object({ functions: T.Integer(), agents: T.Integer(), subagents: T.Integer() }),
  },
  { title: 'QueueStats' },
)

export const DlqEntry = T.Object(
  { job_id: Uuid, pool: T.String(), kind: T.String(), namespace: T.String(), name: T.String(), error: Nullable(T.String()), attempts: T.Integer(), created_at: T.String() },
  { title: 'DlqEntry' },
)

export const WorkerRecord = T.Object(
  { role: T.String(), node_id: T.String(), info: T.Record(T.String(), T.Unknown()), last_seen: T.String() },
  { title: 'Worker' },
)
