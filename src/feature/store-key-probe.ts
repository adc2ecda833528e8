import type { Principal } from '../auth/principal.ts'

/*
 * Whether a key exists in a store, for the manifest status. States are another feature's
 * (src/states/), whose service part provides its lookup (`storeKeyProbe` of its ServicePart); the
 * service role hands it to every feature as `ctx.storeKeyProbe()`, so the manifests feature does
 * not import the states' database code. A process without that part (none today) checks the store
 * resource only and reports `key_checked: false`.
 */
export type StoreKeyProbe = (
  p: Principal,
  store: { id: string; namespace: string; name: string },
  key: string,
) => Promise<boolean>
