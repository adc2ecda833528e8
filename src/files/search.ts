import type { Static } from '@sinclair/typebox'
import type { FileSearchHit } from '../../schemas/collection.ts'
import type { Principal } from '../auth/principal.ts'
import type { Db } from '../platform/db.ts'
import { canSeeFile, type CollectionRecord } from './access.ts'
import { filesOf, searchFiles } from './store.ts'

/*
 * Search within one collection (`{query?, metadata_filter?, limit?}` →
 * `[{filename, version, matches: [{line, text}]}]`): the current version of every file the caller
 * may see whose name or stored text contains `query` (case-insensitive) and whose metadata
 * contains `metadata_filter` (jsonb containment). `matches` are the text lines holding the query
 * (1-based line numbers, at most 20 per file, each clipped to 300 characters); a match on the
 * name alone has none. Without `query`, every visible file matching the filter is listed.
 */
const MAX_MATCHES = 20
const MAX_LINE = 300

export async function searchCollection(
  db: Db,
  p: Principal,
  c: CollectionRecord,
  q: { query?: string; metadata_filter?: Record<string, unknown>; limit?: number },
): Promise<Static<typeof FileSearchHit>[]> {
  const visible = (await filesOf(db, c.id)).filter((f) => canSeeFile(p, c, f))
  const hits = await searchFiles(
    db,
    visible.map((f) => f.id),
    q.query,
    q.metadata_filter,
    q.limit ?? 20,
  )
  const needle = (q.query ?? '').toLowerCase()
  return hits.map((h) => {
    const matches: { line: number; text: string }[] = []
    if (needle !== '' && h.text_content !== null) {
      const lines = h.text_content.split('\n')
      for (let i = 0; i < lines.length && matches.length < MAX_MATCHES; i++) {
        const line = lines[i] as string
        if (line.toLowerCase().includes(needle))
          matches.push({ line: i + 1, text: line.length > MAX_LINE ? `${line.slice(0, MAX_LINE)}…` : line })
      }
    }
    return { filename: h.name, version: h.version, matches }
  })
}
