import { Value } from '@sinclair/typebox/value'
import { sql } from '../platform/db.ts'
import type { AnyKind } from './kind.ts'
import type { ResourceMeta } from './permissions.ts'
import type { ResourceRecord } from './service.ts'

/** One row of the `resources` table. */
export interface Row {
  id: string
  kind: string
  namespace: string
  name: string
  spec: Record<string, unknown>
  secrets: Record<string, string>
  owner_id: string | null
  managed_by: string | null
  checksum: string
  version: number
  is_active: boolean
  created_at: string
  updated_at: string
}

export const ROW_COLUMNS = sql.unsafe`id, kind, namespace, name, spec, secrets, owner_id, managed_by, checksum, version, is_active, created_at, updated_at`

/** What the permission checks need of a row. */
export const rowMeta = (row: Row): ResourceMeta => ({ namespace: row.namespace, name: row.name, ownerId: row.owner_id })

/** A row as the API returns it: spec defaults filled in, secret fields replaced by `has_<field>`. */
export function toRecord(kind: AnyKind, row: Row): ResourceRecord {
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
