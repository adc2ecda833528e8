import type { Principal } from '../auth/principal.ts'

/*
 * Whether a key exists in a store, for the manifest status. Stores and their states are another
 * module's (built in parallel); it registers its lookup here once it exists. Until then the
 * status checks the store resource only and reports `key_checked: false`.
 */
export type StoreKeyProbe = (p: Principal, store: { id: string; namespace: string; name: string }, key: string) => Promise<boolean>

let probe: StoreKeyProbe | undefined

export function registerStoreKeyProbe(fn: StoreKeyProbe): void {
  probe = fn
}

export const storeKeyProbe = (): StoreKeyProbe | undefined => probe
