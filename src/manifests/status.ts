import type { Static } from '@sinclair/typebox'
import type { ManifestSpec, ManifestStatus } from '../../schemas/manifest.ts'
import { can, type Principal } from '../auth/principal.ts'
import { toAppError } from '../kernel/errors.ts'
import { kindByName } from '../kinds/lookup.ts'
import type { AnyKind } from '../resources/kind.ts'
import type { Address, ResourceRecord, ResourceService } from '../resources/service.ts'
import type { StoreKeyProbe } from '../feature/store-key-probe.ts'

/*
 * A manifest's status, as seen by the caller: a required resource is
 * satisfied when it exists, is active and the caller can read it (one the caller cannot see is
 * missing: the status is no way to learn what others own); a permission is granted when the
 * caller holds it now; a store dependency exists when the store resource does (kind `store`,
 * looked up by name in the registry) and the caller can see it, and, with a `key`, when the
 * states feature's probe (src/feature/store-key-probe.ts) finds a live entry the caller could read. `ready` needs everything
 * required; optional permissions are reported but do not count.
 */
export type ManifestStatusBody = Static<typeof ManifestStatus>

async function visible(
  resources: ResourceService,
  p: Principal,
  kind: AnyKind,
  address: Address,
): Promise<ResourceRecord | null> {
  try {
    const r = await resources.get(p, kind, address)
    return r.is_active === false ? null : r
  } catch (err) {
    if (toAppError(err).status === 404) return null
    throw err
  }
}

const split = (p: Principal, perms: readonly string[]) => ({
  granted: perms.filter((x) => can(p, x)),
  missing: perms.filter((x) => !can(p, x)),
})

export async function manifestStatus(
  resources: ResourceService,
  p: Principal,
  manifest: Static<typeof ManifestSpec>,
  /** Whether a key exists in a store, when the process has the states feature's service part. */
  probe: StoreKeyProbe | undefined,
): Promise<ManifestStatusBody> {
  const out: ManifestStatusBody = {
    ready: false,
    resources: { satisfied: [], missing: [] },
    permissions: {
      required: split(p, manifest.required_permissions),
      optional: split(p, manifest.optional_permissions),
    },
    stores: { satisfied: [], missing: [] },
  }
  for (const r of manifest.required_resources) {
    const kind = kindByName(resources.kinds, r.type)
    const address: Address | undefined =
      kind === undefined
        ? undefined
        : kind.addressing === 'named'
          ? { name: r.name }
          : { namespace: r.namespace, name: r.name }
    const found = kind !== undefined && address !== undefined && (await visible(resources, p, kind, address)) !== null
    out.resources[found ? 'satisfied' : 'missing'].push({
      type: r.type,
      namespace: r.namespace,
      name: r.name,
      exists: found,
    })
  }
  const storeKind = kindByName(resources.kinds, 'store')
  for (const dep of manifest.store_dependencies) {
    const [namespace = '', name = ''] = dep.store.split('/')
    const key = dep.key ?? null
    const store = storeKind === undefined ? null : await visible(resources, p, storeKind, { namespace, name })
    let exists = store !== null
    let keyChecked = false
    if (store !== null && key !== null && probe !== undefined) {
      exists = await probe(p, { id: store.id, namespace, name }, key)
      keyChecked = true
    }
    out.stores[exists ? 'satisfied' : 'missing'].push({ store: dep.store, key, exists, key_checked: keyChecked })
  }
  out.ready =
    out.resources.missing.length === 0 &&
    out.permissions.required.missing.length === 0 &&
    out.stores.missing.length === 0
  return out
}
