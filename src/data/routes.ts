import { ConnectionTestBody, ConnectionTestResult } from '../../schemas/database-connection.ts'
import { QueryExecuteBody, QueryExecuteResult, QueryParams } from '../../schemas/query.ts'
import { IdParams } from '../../schemas/resources.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'

/*
 * Routes of the data feature beyond the CRUD the resource engine gives both kinds:
 * connection tests (admin) and query execution. Execution is served on the runtime path
 * (`/queries/{ns}/{name}/execute`) and, with the same handler, under the management prefix.
 */
const auth = { auth: true as const, target: 'rpc' as const }

export const DATA_ROUTES = {
  testRaw: defineRoute({
    ...auth,
    surface: 'management',
    tags: ['DatabaseConnection'],
    id: 'database-connections.test',
    method: 'POST',
    path: '/api/v1/database-connections/test',
    summary: 'Test raw connection parameters (admin); nothing is stored',
    body: ConnectionTestBody,
    response: ConnectionTestResult,
    errors: [403, 422, 502],
  }),
  testSaved: defineRoute({
    ...auth,
    surface: 'management',
    tags: ['DatabaseConnection'],
    id: 'database-connections.test-saved',
    method: 'POST',
    path: '/api/v1/database-connections/{id}/test',
    summary: 'Test a saved connection (admin)',
    params: IdParams,
    response: ConnectionTestResult,
    errors: [403, 404, 422, 502],
  }),
  execute: defineRoute({
    ...auth,
    surface: 'runtime',
    tags: ['Queries'],
    id: 'queries.execute',
    method: 'POST',
    path: '/queries/{namespace}/{name}/execute',
    summary: 'Execute a saved query with parameters',
    params: QueryParams,
    body: QueryExecuteBody,
    response: QueryExecuteResult,
    errors: [403, 404, 409, 422, 502, 504],
  }),
  executeManagement: defineRoute({
    ...auth,
    surface: 'management',
    tags: ['Query'],
    id: 'queries.execute-management',
    method: 'POST',
    path: '/api/v1/queries/{namespace}/{name}/execute',
    summary: 'Execute a saved query with parameters (same as POST /queries/{namespace}/{name}/execute)',
    params: QueryParams,
    body: QueryExecuteBody,
    response: QueryExecuteResult,
    errors: [403, 404, 409, 422, 502, 504],
  }),
}

export const dataRoutes = (): RouteDef[] => Object.values(DATA_ROUTES)
