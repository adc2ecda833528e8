import { Type as T, type Static } from '@sinclair/typebox'
import { Nullable, Uuid } from './common.ts'

/* Wire shapes of jobs, executions and the queue admin endpoints. */
export const JobStatus = T.Union(
  ['scheduled', 'queued', 'running', 'completed', 'failed', 'cancelled'].map((s) => T.Literal(s)),
  { description: 'job status' },
)

/**
 * How a job failed, as the job state carries it: `code` is a registered error code
 * (`function.error`, `function.timeout`, `job.timeout`, …) that callers decide on, `type` the
 * Python exception type for function errors ('' otherwise), `message` the text. The API's
 * `error` fields stay text: `jobErrorText` (src/jobs/job-state.ts) renders `type: message`.
 */
export const JobError = T.Object(
  {
    code: T.String(),
    type: T.String({ description: "Python exception type for function errors, '' otherwise" }),
    message: T.String(),
  },
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
    output: Nullable(
      T.String({ description: 'what a function printed in its last attempt (stdout and stderr, at most 64 KB)' }),
    ),
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
    jobs: T.Object({
      scheduled: T.Integer(),
      queued: T.Integer(),
      running: T.Integer(),
      completed: T.Integer(),
      failed: T.Integer(),
      cancelled: T.Integer(),
    }),
    dlq: T.Object({ size: T.Integer() }),
    workers: T.Object({ functions: T.Integer(), agents: T.Integer(), subagents: T.Integer() }),
  },
  { title: 'QueueStats' },
)

export const DlqEntry = T.Object(
  {
    job_id: Uuid,
    pool: T.String(),
    kind: T.String(),
    namespace: T.String(),
    name: T.String(),
    error: Nullable(T.String()),
    attempts: T.Integer(),
    created_at: T.String(),
  },
  { title: 'DlqEntry' },
)

export const WorkerRecord = T.Object(
  { role: T.String(), node_id: T.String(), info: T.Record(T.String(), T.Unknown()), last_seen: T.String() },
  { title: 'Worker' },
)

/*
 * The live state of a job as the JOB_STATE bucket holds it (one entry per job id; see
 * src/jobs/job-state.ts for the transitions) and as the job payload travels between the service
 * and the workers.
 */
export const POOLS = ['fn', 'agent', 'subagent'] as const

export const JOB_STATUSES = ['scheduled', 'queued', 'running', 'completed', 'failed', 'cancelled'] as const

export const JobState = T.Object({
  id: T.String({ format: 'uuid' }),
  pool: T.Union(POOLS.map((p) => T.Literal(p))),
  /** What runs: `function`, `agent`, or a kind a later module registers. */
  kind: T.String(),
  namespace: T.String(),
  name: T.String(),
  status: T.Union(JOB_STATUSES.map((s) => T.Literal(s))),
  /** Starts so far (a retry or a redelivery after a lost worker counts). */
  attempts: T.Integer({ minimum: 0 }),
  user_id: T.Union([T.String(), T.Null()]),
  trigger_type: T.String(),
  trigger_id: T.String(),
  chat_id: T.Union([T.String(), T.Null()]),
  parent_id: T.Union([T.String(), T.Null()]),
  depth: T.Integer({ minimum: 0 }),
  input: T.Unknown(),
  worker: T.Union([T.String(), T.Null()]),
  result: T.Optional(T.Unknown()),
  /** The result was too large for the bucket and lives in Postgres only. */
  result_stored: T.Optional(T.Boolean()),
  /**
   * What a function printed in its last attempt (stdout and stderr, at most 64 KB: the sandbox
   * runner's cap); absent when it printed nothing.
   */
  output: T.Optional(T.String()),
  /** How the last attempt failed; a plain string in entries written before errors were structured. */
  error: T.Union([JobError, T.String(), T.Null()]),
  /** DLQ stream sequence once the job was moved there. */
  dlq_seq: T.Optional(T.Integer()),
  retry_of: T.Union([T.String(), T.Null()]),
  callback_url: T.Union([T.String(), T.Null()]),
  created_at: T.String(),
  started_at: T.Union([T.String(), T.Null()]),
  finished_at: T.Union([T.String(), T.Null()]),
  due_at: T.Optional(T.String()),
  /** Attempts allowed for this job (default: the pool's rule); 1 = never retried (synchronous calls). */
  max_attempts: T.Optional(T.Integer({ minimum: 1 })),
  /** Per-attempt time limit for this job (default: the pool's), ms. */
  timeout_ms: T.Optional(T.Integer({ minimum: 1 })),
  /** What the executor needs beyond the input (function version, caller email); not part of input_data. */
  meta: T.Optional(T.Record(T.String(), T.Unknown())),
  /** The span that asked for the job, as a W3C traceparent (tracing on only): the run's span is its child. */
  traceparent: T.Optional(T.String({ maxLength: 64 })),
})
export type JobState = Static<typeof JobState>

/*
 * The public execution event, published on `events.execution.<namespace>.<name>.<status>` (stream
 * EVENTS; src/jobs/events.ts builds it from the job state). Versioned by `schema`.
 */
export const EXECUTION_EVENT_SCHEMA = 'platform.execution.v1'

export const ExecutionEvent = T.Object({
  schema: T.Literal(EXECUTION_EVENT_SCHEMA),
  execution_id: T.String({ format: 'uuid' }),
  revision: T.Integer({ description: 'JOB_STATE revision; increases with every change of this execution' }),
  pool: T.String({ description: 'fn | agent | subagent' }),
  kind: T.String({ description: 'function | agent | …' }),
  namespace: T.String(),
  name: T.String(),
  status: T.String({ description: 'scheduled | queued | running | completed | failed | cancelled' }),
  attempt: T.Integer(),
  user_id: T.Union([T.String(), T.Null()]),
  trigger_type: T.String(),
  trigger_id: T.String(),
  chat_id: T.Union([T.String(), T.Null()]),
  parent_id: T.Union([T.String(), T.Null()]),
  error: T.Union([T.String(), T.Null()]),
  error_code: T.Optional(
    T.Union([T.String(), T.Null()], {
      description: "the error's registered code (`function.error`, `job.timeout`, …)",
    }),
  ),
  result: T.Optional(
    T.Unknown({ description: 'on completed, when it fits in 64 KB; otherwise GET /jobs/{id}/result' }),
  ),
  created_at: T.String(),
  started_at: T.Union([T.String(), T.Null()]),
  finished_at: T.Union([T.String(), T.Null()]),
  duration_ms: T.Union([T.Integer(), T.Null()]),
})
export type ExecutionEvent = Static<typeof ExecutionEvent>
