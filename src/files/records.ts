import type { Static } from '@sinclair/typebox'
import type { FileRecord } from '../../schemas/collection.ts'
import type { CollectionRecord } from './access.ts'
import type { FileRowT, VersionRowT } from './store.ts'

/** A file row and its versions (newest first) as the API answers them. */
export function toFileRecord(
  c: CollectionRecord,
  f: FileRowT,
  versions: readonly VersionRowT[],
): Static<typeof FileRecord> {
  const own = versions.filter((v) => v.file_id === f.id)
  const current = own.find((v) => v.version === f.current_version)
  return {
    id: f.id,
    namespace: c.namespace,
    collection: c.name,
    name: f.name,
    content_type: current?.content_type ?? 'application/octet-stream',
    current_version: f.current_version,
    size_bytes: current?.size_bytes ?? 0,
    file_metadata: f.file_metadata,
    visibility: f.visibility,
    owner_id: f.owner_id,
    created_at: f.created_at,
    updated_at: f.updated_at,
    versions: own.map((v) => ({
      version: v.version,
      size_bytes: v.size_bytes,
      hash_sha256: v.hash_sha256,
      content_type: v.content_type,
      uploaded_by: v.uploaded_by,
      created_at: v.created_at,
    })),
  }
}
