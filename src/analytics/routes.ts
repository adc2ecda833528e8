import { ExecutionLogPage, ExecutionLogQuery, RequestLogPage, RequestLogQuery } from '../../schemas/analytics.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'

/*
 * The log pages (admin): every API request (`/api/v1/request-logs`) and every finished execution
 * (`/api/v1/execution-logs`), from ClickHouse. Without ANALYTICS_HOST they answer empty pages.
 * Both refuse query fields they do not know (`strictQuery`): a misspelt filter must not widen the
 * page silently.
 */
export const ANALYTICS_ROUTES = {
  requestLogs: defineRoute({
    id: 'request-logs.list',
    method: 'GET',
    path: '/api/v1/request-logs',
    surface: 'management',
    summary: 'API requests, newest first, filtered by time, user, route, status class and duration (admin)',
    tags: ['Logs'],
    auth: true,
    target: 'rpc',
    query: RequestLogQuery,
    strictQuery: true,
    response: RequestLogPage,
    errors: [403, 422, 503],
    permission: 'platform.request-logs.read:all',
  }),
  executionLogs: defineRoute({
    id: 'execution-logs.list',
    method: 'GET',
    path: '/api/v1/execution-logs',
    surface: 'management',
    summary:
      'Finished executions (functions, agents), newest first, filtered by time, user, target, status and duration (admin)',
    tags: ['Logs'],
    auth: true,
    target: 'rpc',
    query: ExecutionLogQuery,
    strictQuery: true,
    response: ExecutionLogPage,
    errors: [403, 422, 503],
    permission: 'platform.execution-logs.read:all',
  }),
}

export function analyticsRoutes(): RouteDef[] {
  return Object.values(ANALYTICS_ROUTES)
}
