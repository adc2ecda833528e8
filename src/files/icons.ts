import { loadPrincipal, type Principal } from '../auth/principal.ts'
import type { Config } from '../kernel/config.ts'
import { AppError } from '../kernel/errors.ts'
import type { Db } from '../platform/db.ts'
import type { AnyKind } from '../resources/kind.ts'
import type { ResourceRecord, ResourceService } from '../resources/service.ts'
import { canSeeFile, readableCollection, type CollectionRecord } from './access.ts'
import { parseCollectionIcon } from './icon-check.ts'
import { signFileVersion } from './signed-url.ts'
import { fileByName, versionOf, type FileRowT } from './store.ts'

/** Icons on read: see icon-check.ts for the rules on save and what `icon_url` holds. */
export function iconResolver(d: { db: Db; config: Config; resources: ResourceService; base: string }) {
  /** The collection as the resource's owner sees it; null when the owner cannot read it (or is gone). */
  async function ownersCollection(
    ownerId: string,
    namespace: string,
    name: string,
  ): Promise<{ owner: Principal; c: CollectionRecord } | null> {
    try {
      const owner = await loadPrincipal(d.db, { sub: ownerId, via: 'jwt' })
      return { owner, c: await readableCollection(d.resources, owner, namespace, name) }
    } catch (err) {
      if (err instanceof AppError && (err.status === 401 || err.status === 404)) return null
      throw err
    }
  }

  /*
   * Whose file may become an icon: the resource's owner must see it themselves — their own private
   * file, or a shared file of a collection they may read. The URL is readable by anyone holding it,
   * so without this check B could name A's file in B's agent and read it through icon_url.
   * (An administrator's read_private:all does not count: nobody exposes another user's private file.)
   */
  const mayExpose = (owner: Principal, c: CollectionRecord, f: FileRowT) =>
    f.visibility === 'shared' ? canSeeFile(owner, c, f) : f.owner_id === owner.userId

  /** `icon_url` for one record's `icon`: the URL itself, a signed URL of the owner's file, or null. */
  const iconUrl = async (r: ResourceRecord, icon: string): Promise<string | null> => {
    if (icon.startsWith('url:')) return icon.slice(4)
    const at = icon.startsWith('collection:') ? parseCollectionIcon(icon.slice('collection:'.length)) : null
    const ownerId = r.owner_id ?? null
    if (at === null || ownerId === null) return null
    const seen = await ownersCollection(ownerId, at.namespace, at.collection)
    if (seen === null) return null
    const f = await fileByName(d.db, seen.c.id, at.filename)
    if (f === null || !mayExpose(seen.owner, seen.c, f)) return null
    const v = await versionOf(d.db, f.id, f.current_version)
    // Shared and private files alike get a signed URL: `/files/…` needs a bearer token, which an
    // <img> cannot send, and no file visibility is readable without one.
    return v === null
      ? null
      : `${d.base}/files/_signed/${await signFileVersion(d.config.SECRET_KEY, v.id, d.config.FILES_ICON_URL_SECONDS)}`
  }

  return async (_p: Principal, _kind: AnyKind, records: readonly ResourceRecord[]) => {
    const added: ({ icon_url: string | null } | undefined)[] = []
    for (const r of records) {
      const icon = r['icon']
      added.push(typeof icon === 'string' ? { icon_url: await iconUrl(r, icon) } : undefined)
    }
    return added
  }
}
