import { Type as T } from '@sinclair/typebox'
import { can, type Principal } from '../auth/principal.ts'
import { forbidden, notFound } from '../kernel/errors.ts'
import { sql } from '../platform/db.ts'
import { anyRows, rowType } from '../platform/typed-rows.ts'
import type { ResourceEngine } from './engine.ts'
import { findRow, visibleRow } from './find-row.ts'
import type { AnyKind } from './kind.ts'
import { canOnResource, resourcePermission } from './permissions.ts'
import { ROW_COLUMNS, ResourceRow, rowMeta, toRecord, type Row } from './row.ts'
import { openSecret } from './secrets.ts'
import type { Address, ExpandOptions, ListOptions, ResourceRecord } from './service.ts'

/*
 * The resource engine's reads: with a principal they answer only what it may read (404 for one
 * it may not); `resourceById`, `loadManyResources` and `secretsOfResource` are the platform's own.
 */

/** One row of `resource_versions`, which GET …/versions answers as is. */
const VersionRow = rowType(
  T.Object({ version: T.Number(), fields: T.Unknown(), created_by: T.Union([T.String(), T.Null()]), created_at: T.String() }, { title: 'resource version' }),
)

export async function listResources(e: ResourceEngine, p: Principal, kind: AnyKind, options: ListOptions = {}): Promise<{ items: ResourceRecord[]; total: number }> {
  // An admin-only area answers 403 to others (an empty 200 would suggest they may use it).
  if (kind.adminOnly && !can(p, resourcePermission(kind, 'read', { namespace: '*', name: '*' }, 'all'))) {
    throw forbidden(`${kind.plural} are admin-only`, 'auth.admin_only')
  }
  const limit = options.limit ?? 100
  const offset = options.offset ?? 0
  const nsFilter = options.namespaces !== undefined && options.namespaces.length > 0 ? sql.unsafe`and namespace = any(${sql.array(options.namespaces, 'text')})` : sql.unsafe``
  const rows = await anyRows(e.db, ResourceRow, sql.unsafe`select ${ROW_COLUMNS} from resources where kind = ${kind.kind} ${nsFilter} order by namespace, name`)
  const visible = rows.filter((r) => canOnResource(p, kind, 'read', rowMeta(r)))
  return { items: visible.slice(offset, offset + limit).map((r) => toRecord(kind, r)), total: visible.length }
}

export async function getResource(e: ResourceEngine, p: Principal, kind: AnyKind, address: Address): Promise<ResourceRecord> {
  return toRecord(kind, await visibleRow(e.db, p, kind, address))
}

/** Wildcard expansion: active resources the principal may read that match `ns/name`, `ns/*` or `*\/*`. */
export async function expandResources(e: ResourceEngine, p: Principal, kind: AnyKind, patterns: readonly string[], options: ExpandOptions = {}): Promise<{ namespace: string; name: string }[]> {
  const rows = await anyRows(e.db, ResourceRow, sql.unsafe`select ${ROW_COLUMNS} from resources where kind = ${kind.kind} and is_active order by namespace, name`)
  const within = options.wildcardNamespaces
  const matchers = patterns.map((pat) => {
    const [ns, name] = pat.split('/')
    const wildcard = ns === '*' || name === '*'
    return (r: Row) =>
      (ns === '*' || ns === r.namespace) && (name === '*' || name === r.name) && (!wildcard || within === undefined || within.has(r.namespace))
  })
  return rows.filter((r) => matchers.some((m) => m(r)) && canOnResource(p, kind, 'read', rowMeta(r))).map((r) => ({ namespace: r.namespace, name: r.name }))
}

export async function resourceVersions(e: ResourceEngine, p: Principal, kind: AnyKind, address: Address) {
  const row = await visibleRow(e.db, p, kind, address)
  return anyRows(e.db, VersionRow, sql.unsafe`select version, fields, created_by, created_at from resource_versions where resource_id = ${row.id}::uuid order by version desc`)
}

export async function resourceById(e: ResourceEngine, kind: AnyKind, id: string): Promise<ResourceRecord | null> {
  const row = await findRow(e.db, kind, { id })
  return row === null ? null : toRecord(kind, row)
}

export async function loadManyResources(e: ResourceEngine, kind: AnyKind, refs: readonly string[]): Promise<ResourceRecord[]> {
  if (refs.length === 0) return []
  const rows = await anyRows(
    e.db,
    ResourceRow,
    sql.unsafe`select ${ROW_COLUMNS} from resources where kind = ${kind.kind} and (namespace || '/' || name) = any(${sql.array([...refs], 'text')})`,
  )
  const byRef = new Map(rows.map((r) => [`${r.namespace}/${r.name}`, r]))
  return refs.flatMap((ref) => {
    const row = byRef.get(ref)
    return row === undefined ? [] : [toRecord(kind, row)]
  })
}

export async function secretsOfResource(e: ResourceEngine, kind: AnyKind, id: string): Promise<Record<string, string>> {
  const row = await findRow(e.db, kind, { id })
  if (row === null) throw notFound(`${kind.kind} ${id} not found`)
  return Object.fromEntries(Object.entries(row.secrets).map(([k, v]) => [k, openSecret(e.box, kind, row.id, k, v)]))
}
