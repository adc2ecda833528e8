import type { Static } from '@sinclair/typebox'
import type { CollectionSpec } from '../../schemas/collection.ts'
import { permissionSet } from '../feature/permissions.ts'
import { can, type Principal } from '../auth/principal.ts'
import { AppError, forbidden, notFound } from '../kernel/errors.ts'
import { collectionKind } from '../kinds/collection/kind.ts'
import { canOnResource, resourcePermission } from '../resources/permissions.ts'
import type { ResourceRecord, ResourceService } from '../resources/service.ts'
import type { FileRowT } from './store.ts'

/** The permissions this module checks, for the reference (its feature contributes the list). */
export const filePermissions = permissionSet()

/*
 * Who may do what with files, decided on the collection resource:
 *  - list, file info, search: the collection's `read` (own or all);
 *  - download (the bytes, a temporary URL, the agent's read_file tool): its `download`;
 *  - upload (every upload shape, the agent's write_file tool): its `upload`;
 *  - update metadata, delete: its `update`;
 *  - a `shared` file is seen by everyone who may read the collection; a `private` one by its
 *    uploader only — and by holders of `…read_private:all` (administrators);
 *  - changing or deleting someone else's file needs the collection's `update:all`.
 * Anything the caller may not see answers 404, like a missing one.
 */
export const FILE_PERMISSIONS = {
  readPrivate: filePermissions.add(
    'platform.collections/{namespace}/{name}.read_private:all',
    'Collection: see and manage private files of other users',
  ),
  uploadOwn: filePermissions.add(
    'platform.collections/{namespace}/{name}.upload:own',
    'Collection: upload files (own collections)',
  ),
  uploadAll: filePermissions.add(
    'platform.collections/{namespace}/{name}.upload:all',
    'Collection: upload files (any collection)',
  ),
  downloadOwn: filePermissions.add(
    'platform.collections/{namespace}/{name}.download:own',
    'Collection: download files (own collections)',
  ),
  downloadAll: filePermissions.add(
    'platform.collections/{namespace}/{name}.download:all',
    'Collection: download files (any collection)',
  ),
}

export type CollectionRecord = ResourceRecord<Static<typeof CollectionSpec>> & {
  namespace: string
  owner_id: string | null
}

const meta = (c: CollectionRecord) => ({ namespace: c.namespace, name: c.name, ownerId: c.owner_id ?? null })

/** The collection when the caller may read it (404 otherwise, or when it is inactive). */
export async function readableCollection(
  resources: ResourceService,
  p: Principal,
  namespace: string,
  name: string,
): Promise<CollectionRecord> {
  const c = (await resources.get(p, collectionKind, { namespace, name }).catch((err: unknown) => {
    if (err instanceof AppError && err.status === 404) return null
    throw err
  })) as CollectionRecord | null
  if (c === null || c.is_active === false) throw notFound(`collection ${namespace}/${name} not found`)
  return c
}

/** The collection when the caller may change or delete its files (`update`; 404 when it may not even read it, 403 when read-only). */
export async function writableCollection(
  resources: ResourceService,
  p: Principal,
  namespace: string,
  name: string,
): Promise<CollectionRecord> {
  const c = await readableCollection(resources, p, namespace, name)
  if (!canOnResource(p, collectionKind, 'update', meta(c)))
    throw forbidden(`not allowed to write files in collection ${namespace}/${name}`)
  return c
}

/**
 * The collection when the caller may `upload` or `download` its files: 404 when it may neither
 * read the collection nor do that (nothing leaks), 403 when it sees the collection but lacks the
 * verb. The verb alone is enough: a role may let files in or out without the rest of `read`.
 */
export async function collectionFor(
  resources: ResourceService,
  p: Principal,
  namespace: string,
  name: string,
  action: 'upload' | 'download',
): Promise<CollectionRecord> {
  // the platform's own read (no `read` check): the verbs below are the check
  const [c] = name.includes('/')
    ? []
    : ((await resources.loadMany(collectionKind, [`${namespace}/${name}`])) as CollectionRecord[])
  const m = c === undefined ? null : meta(c)
  const may = m !== null && canOnResource(p, collectionKind, action, m)
  if (c === undefined || m === null || c.is_active === false || (!may && !canOnResource(p, collectionKind, 'read', m)))
    throw notFound(`collection ${namespace}/${name} not found`)
  if (!may) throw forbidden(`not allowed to ${action} files in collection ${namespace}/${name}`)
  return c
}

export function canSeeFile(p: Principal, c: CollectionRecord, f: FileRowT): boolean {
  if (f.visibility === 'shared') return true
  return f.owner_id === p.userId || can(p, resourcePermission(collectionKind, 'read_private', meta(c), 'all'))
}

/** May change or delete `f` (already known to be visible). */
export function canChangeFile(p: Principal, c: CollectionRecord, f: FileRowT): boolean {
  return f.owner_id === p.userId || can(p, resourcePermission(collectionKind, 'update', meta(c), 'all'))
}

export const fileNotFound = (c: CollectionRecord, name: string) =>
  notFound(`file ${name} not found in ${c.namespace}/${c.name}`, 'file.not_found')
