import { Type as T } from '@sinclair/typebox'
import { Name, Namespace, Nullable, Uuid } from '../../schemas/common.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'

/* Function execution endpoints (SPEC §4.2, WIRE.md "Functions and executions"). */
export const ExecuteBody = T.Object(
  {
    input: T.Unknown({ description: "validated against the function's input_schema" }),
    timeout: T.Optional(T.Integer({ minimum: 1, maximum: 86_400, description: "seconds; at most the function's own timeout" })),
  },
  { additionalProperties: false },
)

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

export const ExecuteAsyncBody = T.Object(
  {
    input: T.Unknown({ description: "required; validated against the function's input_schema" }),
    trigger_id: T.Optional(T.String({ minLength: 1, maxLength: 200 })),
    delay_seconds: T.Optional(Nullable(T.Integer({ minimum: 0, maximum: 30 * 86_400 }))),
    callback_url: T.Optional(T.String({ maxLength: 2048 })),
  },
  { additionalProperties: false },
)

const params = T.Object({ namespace: Namespace, name: Name })
const common = { auth: true as const, target: 'rpc' as const, surface: 'runtime' as const, tags: ['Functions'], params }

export const FUNCTION_ROUTES = {
  functionsExecute: defineRoute({
    ...common,
    id: 'functions.execute',
    method: 'POST',
    path: '/functions/{namespace}/{name}/execute',
    summary: 'Run a function and wait for its result (200 with status success, error or timeout)',
    body: ExecuteBody,
    response: ExecuteResult,
    errors: [404, 422],
  }),
  functionsExecuteAsync: defineRoute({
    ...common,
    id: 'functions.execute-async',
    method: 'POST',
    path: '/functions/{namespace}/{name}/execute/async',
    summary: 'Queue a function execution (optionally delayed, with a callback); answers 202',
    body: ExecuteAsyncBody,
    response: T.Object({ execution_id: Uuid, status: T.Literal('queued') }),
    status: 202,
    errors: [400, 404, 422],
  }),
}

export function functionRoutes(): RouteDef[] {
  return Object.values(FUNCTION_ROUTES)
}
