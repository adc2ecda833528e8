import {
  ExecuteAsyncBody,
  ExecuteBody,
  ExecuteQueued,
  ExecuteResult,
  FunctionParams,
} from '../../schemas/functions-api.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'

/* Function execution endpoints. The shapes live in schemas/functions-api.ts. */

const common = {
  auth: true as const,
  target: 'rpc' as const,
  surface: 'runtime' as const,
  tags: ['Functions'],
  params: FunctionParams,
}

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
    response: ExecuteQueued,
    status: 202,
    errors: [400, 404, 422],
  }),
}

export function functionRoutes(): RouteDef[] {
  return Object.values(FUNCTION_ROUTES)
}
