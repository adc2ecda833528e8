import { UsageQuery, UsageReport } from '../../schemas/usage.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'

/* The usage report: every user their own, admins everyone's. */
export const USAGE_ROUTES = {
  report: defineRoute({
    id: 'usage.report',
    method: 'GET',
    path: '/api/v1/usage',
    surface: 'management',
    summary:
      "Tokens and the providers' reported cost per UTC day, user, agent, provider and model (your own; everyone's with platform.usage.read:all)",
    tags: ['Usage'],
    auth: true,
    target: 'rpc',
    query: UsageQuery,
    // a misspelt filter must not widen the report: unknown query fields answer 422
    strictQuery: true,
    response: UsageReport,
    errors: [403, 422],
    permission: 'platform.usage.read:all',
  }),
}

export function usageRoutes(): RouteDef[] {
  return Object.values(USAGE_ROUTES)
}
