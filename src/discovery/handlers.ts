import type { Static } from '@sinclair/typebox'
import type { DiscoveryParams } from '../../schemas/discovery.ts'
import { NAME_PATTERN } from '../../schemas/common.ts'
import { bind, type BoundRoute } from '../api/bind.ts'
import type { Principal } from '../auth/principal.ts'
import { AppError } from '../kernel/errors.ts'
import { kindByName } from '../kinds/lookup.ts'
import { manifestKind } from '../kinds/manifest/kind.ts'
import type { ResourceService } from '../resources/service.ts'
import { DISCOVERY_ROUTES as R } from './routes.ts'

/*
 * What the caller can see of one type, as the management list answers it (read permission, 404
 * rules and all), active resources only. The type is resolved by name through the resource
 * service's registry (`kinds/lookup.ts`), so this module needs no import of the kinds it lists
 * beyond the lookup.
 *
 * Application filter: the manifest named by `X-Application` (or `?app=`, which wins) is read
 * without the caller's read permission — an application's end users rarely own its manifest,
 * and the filter can only narrow what they already see. Only `exposed_namespaces[<type>]` is
 * used: a type without an entry exposes nothing, `*` exposes every namespace. An unknown or
 * inactive application exposes nothing (an empty list, the same answer as an application that
 * exposes nothing, so the filter is no oracle for which manifests exist).
 */
const DISCOVERY_LIMIT = 1000
const APP_RE = new RegExp(`^${NAME_PATTERN.slice(1, -1)}/${NAME_PATTERN.slice(1, -1)}$`)

type DiscoveryType = Static<typeof DiscoveryParams>['type']

export function discoveryHandlers(d: { resources: ResourceService }): BoundRoute[] {
  const { resources } = d

  /** undefined = no filter; [] = nothing exposed. */
  async function exposedNamespaces(app: string | undefined, type: DiscoveryType): Promise<string[] | undefined> {
    if (app === undefined || app === '') return undefined
    if (!APP_RE.test(app))
      throw new AppError(
        422,
        'discovery.bad_app',
        `application ${JSON.stringify(app.slice(0, 130))} is not <namespace>/<name>`,
        { issues: [{ path: 'app', message: 'must be <namespace>/<name>' }] },
      )
    const [manifest] = await resources.loadMany(manifestKind, [app])
    if (manifest === undefined || manifest.is_active !== true) return []
    const listed = manifest.exposed_namespaces[type] ?? []
    return listed.includes('*') ? undefined : listed
  }

  async function discover(p: Principal, type: DiscoveryType, app: string | undefined) {
    const kind = kindByName(resources.kinds, type)
    if (kind === undefined) return []
    const namespaces = await exposedNamespaces(app, type)
    if (namespaces !== undefined && namespaces.length === 0) return []
    const { items } = await resources.list(p, kind, {
      ...(namespaces === undefined ? {} : { namespaces }),
      limit: DISCOVERY_LIMIT,
    })
    return items.filter((r) => r.is_active === true)
  }

  return [
    bind(R.list, async ({ principal, params, query, request }) => ({
      body: await discover(principal, params.type, query.app ?? request.headers?.['x-application']),
    })),
    bind(R.listV1, async ({ principal, params, query, request }) => ({
      body: await discover(principal, params.type, query.app ?? request.headers?.['x-application']),
    })),
  ]
}
