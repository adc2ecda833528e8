import type { Principal } from '../auth/principal.ts'

/*
 * Whether a key exists in a store, for the manifest status. States are another feature's
 * (src/states/), which registers its lookup here when its service part starts (states/module.ts):
 * the manifests feature must not import the states' database code, and the status is computed in
 * the same resource-service role. A process without that part (none today) would check the store
 * resource only and report `key_checked: false`.
 */
export type StoreKeyProbe = (
  p: Principal,
  store: { id: string; namespace: string; name: string },
  key: string,
) => Promise<boolean>

let probe: StoreKeyProbe | undefined

export function registerStoreKeyProbe(fn: StoreKeyProbe): void {
  probe = fn
}

export const storeKeyProbe = (): StoreKeyProbe | undefined => probe
