import { Type as T, type Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { sql } from '../platform/db.ts'
import { rowType } from '../platform/typed-rows.ts'
import type { AnyKind } from './kind.ts'
import type { ResourceMeta } from './permissions.ts'
import type { ResourceRecord } from './service.ts'

/**
 * One row of the `resources` table (migration 0001) as it comes back: uuids and timestamps as
 * strings, jsonb parsed (src/platform/db.ts). Internal — the API sees `toRecord`'s shape — so a
 * table schema here rather than one of schemas/.
 */
export const ResourceRow = rowType(
  T.Object(
    {
      id: T.String(),
      kind: T.String(),
      namespace: T.String(),
      name: T.String(),
      spec: T.Record(T.String(), T.Unknown()),
      secrets: T.Record(T.String(), T.String()),
      owner_id: T.Union([T.String(), T.Null()]),
      managed_by: T.Union([T.String(), T.Null()]),
      checksum: T.String(),
      version: T.Number(),
      is_active: T.Boolean(),
      created_at: T.String(),
      updated_at: T.String(),
    },
    { title: 'resource' },
  ),
)
export type Row = Static<typeof ResourceRow.schema>

/** The columns `ResourceRow` reads, in every `select`/`returning` of whole rows. */
export const ROW_COLUMNS = sql.unsafe`id, kind, namespace, name, spec, secrets, owner_id, managed_by, checksum, version, is_active, created_at, updated_at`

/** What the permission checks need of a row. */
export const rowMeta = (row: Row): ResourceMeta => ({ namespace: row.namespace, name: row.name, ownerId: row.owner_id })

/**
 * Records already built, per row object. Rows are immutable once read (the row cache replaces a
 * changed row with a new object), so a record is built once per version of a row: filling in the
 * spec's defaults walks the kind's schema and clones the spec, which was the largest single cost
 * of a resource read (16 % of the platform's CPU in bench/gateway.bench.ts). The records are
 * frozen all the way down because every reader shares one: a caller that wants to change one
 * copies it first (an accidental write throws instead of changing every later read).
 */
const records = new WeakMap<Row, { kind: AnyKind; record: ResourceRecord }>()

function deepFreeze<V>(value: V): V {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const v of Object.values(value)) deepFreeze(v)
  }
  return value
}

/** A row as the API returns it: spec defaults filled in, secret fields replaced by `has_<field>`. Frozen; shared by every reader of this row. */
export function toRecord(kind: AnyKind, row: Row): ResourceRecord {
  const hit = records.get(row)
  if (hit !== undefined && hit.kind === kind) return hit.record
  const record = deepFreeze(buildRecord(kind, row))
  records.set(row, { kind, record })
  return record
}

function buildRecord(kind: AnyKind, row: Row): ResourceRecord {
  const spec = Value.Default(kind.spec, structuredClone(row.spec)) as Record<string, unknown>
  const record: ResourceRecord = { id: row.id, name: row.name }
  if (kind.addressing === 'namespaced') record['namespace'] = row.namespace
  for (const [key, value] of Object.entries(spec)) {
    if (kind.secrets.includes(key)) continue
    record[key] = value
  }
  for (const key of kind.secrets) record[`has_${key}`] = row.secrets[key] !== undefined
  return Object.assign(record, {
    managed_by: row.managed_by,
    owner_id: row.owner_id,
    version: row.version,
    is_active: row.is_active,
    created_at: row.created_at,
    updated_at: row.updated_at,
  })
}
