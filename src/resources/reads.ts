import { Type as T } from '@sinclair/typebox'
import { can, type Principal } from '../auth/principal.ts'
import { forbidden, notFound } from '../kernel/errors.ts'
import { sql } from '../platform/db.ts'
import { anyRows, rowType } from '../platform/typed-rows.ts'
import type { ResourceEngine } from './engine.ts'
import { describeAddress } from './find-row.ts'
import type { AnyKind } from './kind.ts'
import { canOnResource, resourcePermission } from './permissions.ts'
import { rowMeta, toRecord, type Row } from './row.ts'
import { openSecret } from './secrets.ts'
import type { Address, ExpandOptions, ListOptions, ResourceRecord } from './service.ts'

/*
 * The resource engine's reads: with a principal they answer only what it may read (404 for one
 * it may not); `resourceById`, `loadManyResources` and `secretsOfResource` are the platform's own.
 */

/** One row of `resource_versions`, which GET …/versions answers as is. */
const VersionRow = rowType(
  T.Object(
    { version: T.Number(), fields: T.Unknown(), created_by: T.Union([T.String(), T.Null()]), created_at: T.String() },
    { title: 'resource version' },
  ),
)

export async function listResources(
  e: ResourceEngine,
  p: Principal,
  kind: AnyKind,
  options: ListOptions = {},
): Promise<{ items: ResourceRecord[]; total: number }> {
  // An admin-only area answers 403 to others (an empty 200 would suggest they may use it).
  if (kind.adminOnly && !can(p, resourcePermission(kind, 'read', { namespace: '*', name: '*' }, 'all'))) {
    throw forbidden(`${kind.plural} are admin-only`, 'auth.admin_only')
  }
  const limit = options.limit ?? 100
  const offset = options.offset ?? 0
  const namespaces =
    options.namespaces !== undefined && options.namespaces.length > 0 ? new Set(options.namespaces) : null
  const rows = await e.rows.all(kind)
  const visible = rows.filter(
    (r) => (namespaces === null || namespaces.has(r.namespace)) && canOnResource(p, kind, 'read', rowMeta(r)),
  )
  return { items: visible.slice(offset, offset + limit).map((r) => toRecord(kind, r)), total: visible.length }
}

/** A resource the principal may not read answers 404, like one that does not exist. */
async function visibleRow(e: ResourceEngine, p: Principal, kind: AnyKind, address: Address): Promise<Row> {
  const row = await e.rows.find(kind, address)
  if (row === null || !canOnResource(p, kind, 'read', rowMeta(row)))
    throw notFound(`${describeAddress(kind, address)} not found`)
  return row
}

export async function getResource(
  e: ResourceEngine,
  p: Principal,
  kind: AnyKind,
  address: Address,
): Promise<ResourceRecord> {
  return toRecord(kind, await visibleRow(e, p, kind, address))
}

/** Wildcard expansion: active resources the principal may read (or act on: `options.actions`) that match `ns/name`, `ns/*` or `*\/*`. */
export async function expandResources(
  e: ResourceEngine,
  p: Principal,
  kind: AnyKind,
  patterns: readonly string[],
  options: ExpandOptions = {},
): Promise<{ namespace: string; name: string }[]> {
  const rows = (await e.rows.all(kind)).filter((r) => r.is_active)
  const within = options.wildcardNamespaces
  const matchers = patterns.map((pat) => {
    const [ns, name] = pat.split('/')
    const wildcard = ns === '*' || name === '*'
    return (r: Row) =>
      (ns === '*' || ns === r.namespace) &&
      (name === '*' || name === r.name) &&
      (!wildcard || within === undefined || within.has(r.namespace))
  })
  const actions = options.actions ?? ['read']
  return rows
    .filter((r) => matchers.some((m) => m(r)) && actions.some((a) => canOnResource(p, kind, a, rowMeta(r))))
    .map((r) => ({ namespace: r.namespace, name: r.name }))
}

export async function resourceVersions(e: ResourceEngine, p: Principal, kind: AnyKind, address: Address) {
  const row = await visibleRow(e, p, kind, address)
  return anyRows(
    e.db,
    VersionRow,
    sql.unsafe`select version, fields, created_by, created_at from resource_versions where resource_id = ${row.id}::uuid order by version desc`,
  )
}

export async function resourceById(e: ResourceEngine, kind: AnyKind, id: string): Promise<ResourceRecord | null> {
  const row = await e.rows.find(kind, { id })
  return row === null ? null : toRecord(kind, row)
}

/** Every resource of the kind, inactive ones included, ordered by namespace and name (the platform's own; no permission check). */
export async function allResources(e: ResourceEngine, kind: AnyKind): Promise<ResourceRecord[]> {
  return (await e.rows.all(kind)).map((r) => toRecord(kind, r))
}

export async function loadManyResources(
  e: ResourceEngine,
  kind: AnyKind,
  refs: readonly string[],
): Promise<ResourceRecord[]> {
  const rows = await Promise.all(
    refs.map((ref) => {
      const slash = ref.indexOf('/')
      return slash < 0 ? null : e.rows.find(kind, { namespace: ref.slice(0, slash), name: ref.slice(slash + 1) })
    }),
  )
  return rows.flatMap((row) => (row === null ? [] : [toRecord(kind, row)]))
}

export async function secretsOfResource(e: ResourceEngine, kind: AnyKind, id: string): Promise<Record<string, string>> {
  const row = await e.rows.find(kind, { id })
  if (row === null) throw notFound(`${kind.kind} ${id} not found`)
  return Object.fromEntries(Object.entries(row.secrets).map(([k, v]) => [k, openSecret(e.box, kind, row.id, k, v)]))
}
