import type { ConfigCurrent, ConfigKind } from '../feature/config-kinds.ts'
import type { Db } from '../platform/db.ts'
import type { Reference } from './references.ts'

/**
 * What the platform holds now, by kind and key, read once per preview or install: the document
 * layer's checks (`exists`, a `resource_ref` variable's target) are synchronous, and a package
 * refers to a few items among what is listed here anyway.
 */
export interface PlatformIndex {
  get(kind: string, key: string): ConfigCurrent | undefined
  exists(kind: string, key: string): boolean
  refs(kind: string, body: Record<string, unknown>): Reference[]
}

/** What a `resource_ref` variable names, as kinds (package-schema.ts VARIABLE_RESOURCES). */
const VARIABLE_RESOURCE_KINDS: Readonly<Record<string, string>> = {
  llm_providers: 'llm_provider',
  database_connections: 'database_connection',
  collections: 'collection',
  secrets: 'secret',
  roles: 'role',
}

export async function readPlatformIndex(db: Db, kinds: ReadonlyMap<string, ConfigKind>): Promise<PlatformIndex> {
  const byKind = new Map<string, Map<string, ConfigCurrent>>()
  for (const [kind, k] of kinds) byKind.set(kind, new Map((await k.list(db)).map((c) => [c.key, c])))
  const get = (kind: string, key: string) => byKind.get(kind)?.get(key)
  return {
    get,
    exists: (kind, key) => get(kind, key) !== undefined,
    refs: (kind, body) => (kinds.get(kind)?.refs(body) ?? []).map((r) => ({ kind: r.kind, ref: r.key })),
  }
}

/**
 * Whether a `resource_ref` variable's value names something that exists: by name for providers,
 * connections and roles, `<namespace>/<name>` (or a bare name in `default`) for collections and secrets.
 */
export function variableResourceExists(index: PlatformIndex, resource: string, ref: string): boolean {
  const kind = VARIABLE_RESOURCE_KINDS[resource]
  if (kind === undefined) return false
  if (index.exists(kind, ref)) return true
  return !ref.includes('/') && index.exists(kind, `default/${ref}`)
}
