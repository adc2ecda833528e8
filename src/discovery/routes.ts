import { Type as T } from '@sinclair/typebox'
import { DiscoveredResource, DiscoveryParams, DiscoveryQuery } from '../../schemas/discovery.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'

/*
 * Discovery: GET /discovery/{agents|functions|skills|collections|templates} on the
 * runtime surface, the same under /api/v1/discovery/…; filtered by `X-Application` / `?app=`.
 */
const rpc = { auth: true, target: 'rpc' } as const
const tags = ['Discovery']
const headers = ['x-application']
const response = T.Array(DiscoveredResource)
const summary =
  "Active resources of a type the caller can read; with X-Application or ?app=<namespace>/<name>, only those in that application manifest's exposed_namespaces for the type"

export const DISCOVERY_ROUTES = {
  list: defineRoute({
    ...rpc,
    surface: 'runtime',
    tags,
    id: 'discovery.list',
    method: 'GET',
    path: '/discovery/{type}',
    summary,
    params: DiscoveryParams,
    query: DiscoveryQuery,
    headers,
    response,
    errors: [422],
  }),
  listV1: defineRoute({
    ...rpc,
    surface: 'management',
    tags,
    id: 'discovery.list-v1',
    method: 'GET',
    path: '/api/v1/discovery/{type}',
    summary: `${summary} (same as GET /discovery/{type})`,
    params: DiscoveryParams,
    query: DiscoveryQuery,
    headers,
    response,
    errors: [422],
  }),
}

export const discoveryRoutes = (): RouteDef[] => Object.values(DISCOVERY_ROUTES)
