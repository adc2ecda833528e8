import { Type as T, type Static } from '@sinclair/typebox'
import { Name, Namespace, Nullable, Uuid } from './common.ts'

/* Function execution and the sandbox administration answers. */
export const FunctionParams = T.Object({ namespace: Namespace, name: Name })

export const ExecuteBody = T.Object(
  {
    input: T.Unknown({ description: "validated against the function's input_schema" }),
    timeout: T.Optional(
      T.Integer({ minimum: 1, maximum: 86_400, description: "seconds; at most the function's own timeout" }),
    ),
  },
  { additionalProperties: false },
)
export type ExecuteBody = Static<typeof ExecuteBody>

export const ExecuteResult = T.Object(
  {
    status: T.Union([T.Literal('success'), T.Literal('error'), T.Literal('timeout')]),
    execution_id: Uuid,
    result: T.Unknown(),
    error: Nullable(T.String()),
    output: T.Optional(T.String({ description: 'what the function printed (at most 64 KB)' })),
    duration_ms: T.Optional(T.Number()),
  },
  { title: 'ExecuteResult' },
)
export type ExecuteResult = Static<typeof ExecuteResult>

export const ExecuteAsyncBody = T.Object(
  {
    input: T.Unknown({ description: "required; validated against the function's input_schema" }),
    trigger_id: T.Optional(T.String({ minLength: 1, maxLength: 200 })),
    delay_seconds: T.Optional(Nullable(T.Integer({ minimum: 0, maximum: 30 * 86_400 }))),
    callback_url: T.Optional(T.String({ maxLength: 2048 })),
  },
  { additionalProperties: false },
)
export type ExecuteAsyncBody = Static<typeof ExecuteAsyncBody>

export const ExecuteQueued = T.Object({ execution_id: Uuid, status: T.Literal('queued') })

/* Sandbox pool and shared-worker administration: the answers summed over every worker process. */
export const ContainersStats = T.Object(
  {
    idle: T.Integer(),
    in_use: T.Integer(),
    total: T.Integer(),
    max_size: T.Integer(),
    nodes: T.Array(T.Record(T.String(), T.Unknown())),
  },
  { additionalProperties: true },
)
export const ContainersScaleBody = T.Object(
  { target: T.Integer({ minimum: 0, maximum: 10_000 }) },
  { additionalProperties: false },
)
export const ContainersScaled = T.Object({
  action: T.Union([T.Literal('scale_up'), T.Literal('scale_down')]),
  previous: T.Integer(),
  current: T.Integer(),
  added: T.Optional(T.Integer()),
  removed: T.Optional(T.Integer()),
})
export const ContainersReloaded = T.Object(
  { status: T.String(), idle_containers: T.Integer(), success: T.Integer(), failed: T.Integer() },
  { additionalProperties: true },
)
export const ContainerParams = T.Object({ container_name: T.String({ minLength: 1, maxLength: 200 }) })
export const ContainerRestarted = T.Object({ status: T.Literal('restarted'), container: T.String() })
export const WorkerList = T.Array(T.Record(T.String(), T.Unknown()))
export const WorkerCount = T.Object({ count: T.Integer() })
export const WorkersScaleBody = T.Object(
  { target_count: T.Integer({ minimum: 0, maximum: 1000 }) },
  { additionalProperties: false },
)
export const WorkersScaled = T.Object({
  action: T.String(),
  previous_count: T.Integer(),
  current_count: T.Integer(),
  added: T.Optional(T.Integer()),
  removed: T.Optional(T.Integer()),
})
export const WorkersReloaded = T.Object({
  status: T.String(),
  total_workers: T.Integer(),
  success: T.Integer(),
  failed: T.Integer(),
})
