import type { Principal } from '../auth/principal.ts'
import type { Config } from '../kernel/config.ts'
import { collectionKind } from '../kinds/collection/kind.ts'
import type { Db } from '../platform/db.ts'
import type { AnyKind } from '../resources/kind.ts'
import type { ResourceRecord, ResourceService } from '../resources/service.ts'
import { parseCollectionIcon } from './icon-check.ts'
import { signFileVersion } from './signed-url.ts'
import { fileByName, versionOf } from './store.ts'

/** Icons on read (SPEC.md §2.16): see icon-check.ts for the rules on save and what `icon_url` holds. */
export function iconResolver(d: { db: Db; config: Config; resources: ResourceService; base: string }) {
  return async (_p: Principal, _kind: AnyKind, records: ResourceRecord[]): Promise<void> => {
    for (const r of records) {
      const icon = r['icon']
      if (typeof icon !== 'string') continue
      if (icon.startsWith('url:')) {
        r['icon_url'] = icon.slice(4)
        continue
      }
      r['icon_url'] = null
      const at = icon.startsWith('collection:') ? parseCollectionIcon(icon.slice('collection:'.length)) : null
      if (at === null) continue
      const [c] = await d.resources.loadMany(collectionKind, [`${at.namespace}/${at.collection}`])
      if (c === undefined || c.is_active === false) continue
      const f = await fileByName(d.db, c.id, at.filename)
      if (f === null) continue
      if (f.visibility === 'shared') {
        r['icon_url'] = `${d.base}/files/${at.namespace}/${at.collection}/${encodeURIComponent(f.name)}`
        continue
      }
      const owner = r.owner_id ?? null
      if (owner === null || f.owner_id !== owner) continue
      const v = await versionOf(d.db, f.id, f.current_version)
      if (v !== null) r['icon_url'] = `${d.base}/files/_signed/${await signFileVersion(d.config.SECRET_KEY, v.id, d.config.FILES_SIGNED_URL_SECONDS)}`
    }
  }
}
