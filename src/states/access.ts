import { permissionSet } from '../feature/permissions.ts'
import { can, type Principal } from '../auth/principal.ts'
import { storeKind } from '../kinds/store/kind.ts'
import { canOnResource, type ResourceMeta } from '../resources/permissions.ts'

/** The permissions this module checks, for the reference (its feature contributes the list). */
export const statePermissions = permissionSet()

/*
 * Who may do what with a store's entries (`platform.stores/{ns}/{name}.read_state|write_state:own|all`).
 * The scope works as everywhere else on the platform: `:own` covers the stores the principal owns,
 * `:all` any store the grant names — so the Users role (`platform.stores/*\/*.read_state:own`) uses
 * its own stores, and sharing a store with someone is granting them `...read_state:all` (and
 * `write_state:all`) on it. Inside a store, an entry's `visibility` decides who sees it:
 * `shared` entries everyone who may read the store's states, `private` ones only their owner and
 * whoever may manage the store (its `update` permission: the store's owner, admins). Changing or
 * deleting an entry takes write access plus being its owner or a manager.
 */
export type StateAction = 'read_state' | 'write_state'

export const STATE_PERMISSIONS = {
  readOwn: statePermissions.add(
    'platform.stores/{namespace}/{name}.read_state:own',
    'Store: read the states of your own stores',
  ),
  readAll: statePermissions.add(
    'platform.stores/{namespace}/{name}.read_state:all',
    'Store: read the states of any store (shared entries, and private ones when you manage the store)',
  ),
  writeOwn: statePermissions.add(
    'platform.stores/{namespace}/{name}.write_state:own',
    'Store: write states in your own stores',
  ),
  writeAll: statePermissions.add(
    'platform.stores/{namespace}/{name}.write_state:all',
    'Store: write states in any store (your own entries, and every entry when you manage the store)',
  ),
}

export const statePermission = (
  store: Pick<ResourceMeta, 'namespace' | 'name'>,
  action: StateAction,
  scope: 'own' | 'all',
): string => `platform.stores/${store.namespace}/${store.name}.${action}:${scope}`

export function canState(p: Principal, store: ResourceMeta, action: StateAction): boolean {
  if (can(p, statePermission(store, action, 'all'))) return true
  return store.ownerId !== null && store.ownerId === p.userId && can(p, statePermission(store, action, 'own'))
}

/** Managers see and change every entry of the store, private ones included. */
export const managesStore = (p: Principal, store: ResourceMeta): boolean => canOnResource(p, storeKind, 'update', store)

/** Whether the principal may see the store at all (else it answers 404, like a missing one). */
export const seesStore = (p: Principal, store: ResourceMeta): boolean =>
  canState(p, store, 'read_state') || canState(p, store, 'write_state') || canOnResource(p, storeKind, 'read', store)

interface EntryMeta {
  owner_id: string | null
  visibility: 'private' | 'shared'
}

export const entryVisible = (p: Principal, entry: EntryMeta, manager: boolean): boolean =>
  manager || entry.visibility === 'shared' || entry.owner_id === p.userId
export const entryWritable = (p: Principal, entry: EntryMeta, manager: boolean): boolean =>
  manager || entry.owner_id === p.userId
