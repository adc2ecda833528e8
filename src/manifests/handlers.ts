import { bind, type BoundRoute } from '../api/bind.ts'
import type { Principal } from '../auth/principal.ts'
import { manifestKind } from '../kinds/manifest/kind.ts'
import type { StoreKeyProbe } from '../feature/store-key-probe.ts'
import type { ResourceService } from '../resources/service.ts'
import { MANIFEST_ROUTES as R } from './routes.ts'
import { manifestStatus } from './status.ts'

/* The status needs read on the manifest: one the caller cannot see answers 404 like a missing one. */
export function manifestHandlers(d: {
  resources: ResourceService
  /** Read at each call: the states feature provides it when its service part starts. */
  storeKeyProbe(): StoreKeyProbe | undefined
}): BoundRoute[] {
  const { resources } = d
  const status = async (p: Principal, namespace: string, name: string) =>
    manifestStatus(resources, p, await resources.get(p, manifestKind, { namespace, name }), d.storeKeyProbe())
  return [
    bind(R.status, async ({ principal, params }) => ({ body: await status(principal, params.namespace, params.name) })),
    bind(R.statusRuntime, async ({ principal, params }) => ({
      body: await status(principal, params.namespace, params.name),
    })),
  ]
}
