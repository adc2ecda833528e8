import { ManifestStatus } from '../../schemas/manifest.ts'
import { NamespacedParams } from '../../schemas/resources.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'

/*
 * The manifest status: GET /api/runtime/manifests/{namespace}/{name}/status as the
 * spec writes it, and the same under the runtime root's /manifests group. CRUD is the generic
 * kind's (/api/v1/manifests).
 */
const rpc = { surface: 'runtime', auth: true, target: 'rpc' } as const
const tags = ['Manifest']
const summary =
  "Check a manifest's dependencies for the caller: `ready`, satisfied and missing resources, granted and missing permissions, existing and missing store dependencies"

export const MANIFEST_ROUTES = {
  status: defineRoute({
    ...rpc,
    tags,
    id: 'manifests.status',
    method: 'GET',
    path: '/api/runtime/manifests/{namespace}/{name}/status',
    summary,
    params: NamespacedParams,
    response: ManifestStatus,
    errors: [404],
  }),
  statusRuntime: defineRoute({
    ...rpc,
    tags,
    id: 'manifests.status-runtime',
    method: 'GET',
    path: '/manifests/{namespace}/{name}/status',
    summary: `${summary} (same as /api/runtime/manifests/…)`,
    params: NamespacedParams,
    response: ManifestStatus,
    errors: [404],
  }),
}

export const manifestRoutes = (): RouteDef[] => Object.values(MANIFEST_ROUTES)
