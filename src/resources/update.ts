import { Value } from '@sinclair/typebox/value'
import type { Principal } from '../auth/principal.ts'
import { forbidden, invalid } from '../kernel/errors.ts'
import { sql } from '../platform/db.ts'
import { oneRow } from '../platform/typed-rows.ts'
import { canonicalJson } from './canonical-json.ts'
import type { ResourceEngine } from './engine.ts'
import { describeAddress, visibleRow } from './find-row.ts'
import type { AnyKind } from './kind.ts'
import { canOnResource } from './permissions.ts'
import { ROW_COLUMNS, ResourceRow, rowMeta, toRecord } from './row.ts'
import { sealSecrets, splitSecrets } from './secrets.ts'
import type { Address, ResourceRecord, WriteOptions } from './service.ts'
import { assertAdminFields, assertValid, validationIssues } from './validation.ts'
import { announceChange, checksumOf, clearExclusiveFlags, versionedFields, writeTransaction } from './write-steps.ts'

export async function updateResource(
  e: ResourceEngine,
  p: Principal,
  kind: AnyKind,
  address: Address,
  patch: Record<string, unknown>,
  options: WriteOptions = {},
): Promise<ResourceRecord> {
  const patchIssues = validationIssues(e.checks(kind).update, patch)
  if (patchIssues.length > 0) throw invalid(`invalid ${kind.kind}`, patchIssues)
  const row = await visibleRow(e.db, p, kind, address)
  if (!canOnResource(p, kind, 'update', rowMeta(row)))
    throw forbidden(`not allowed to update ${describeAddress(kind, address)}`)
  const { is_active: activeIn, ...fields } = patch
  const { spec: specPatch, secretInput } = splitSecrets(kind, fields)
  const before = Value.Default(kind.spec, structuredClone(row.spec)) as Record<string, unknown>
  const merged = { ...before, ...specPatch }
  const withSecrets = { ...merged }
  for (const key of kind.secrets)
    withSecrets[key] = key in secretInput ? secretInput[key] : row.secrets[key] === undefined ? null : 'set'
  await assertValid(e.checks(kind), kind, withSecrets, e.specChecks)
  assertAdminFields(p, kind, 'update', rowMeta(row), before, merged)
  const isActive = typeof activeIn === 'boolean' ? activeIn : row.is_active
  const versionChanged = kind.versioned.some((f) => canonicalJson(before[f]) !== canonicalJson(merged[f]))
  const managedBy = options.managedBy === undefined ? null : options.managedBy
  const updated = await writeTransaction(e, async (tx) => {
    const secrets = sealSecrets(e.box, kind, row.id, row.secrets, secretInput)
    const checksum = checksumOf(merged, isActive)
    const next = await oneRow(
      tx,
      ResourceRow,
      sql.unsafe`
      update resources set spec = ${sql.jsonb(merged as never)}, secrets = ${sql.jsonb(secrets)}, is_active = ${isActive},
        managed_by = ${managedBy}, checksum = ${checksum}, version = version + ${versionChanged ? 1 : 0}, updated_at = now()
      where id = ${row.id}::uuid
      returning ${ROW_COLUMNS}`,
    )
    if (versionChanged) {
      await tx.query(sql.unsafe`insert into resource_versions (resource_id, version, fields, created_by)
        values (${row.id}::uuid, ${next.version}, ${sql.jsonb(versionedFields(kind, merged) as never)}, ${p.userId}::uuid)`)
    }
    await clearExclusiveFlags(tx, kind, row.id, merged)
    return next
  })
  await announceChange(e, kind, updated, merged)
  e.log.info(
    { kind: kind.kind, id: row.id, by: p.userId, detached: row.managed_by !== null && managedBy === null },
    'resource updated',
  )
  return toRecord(kind, updated)
}

/**
 * Deletes the resource; answers its id (for change listeners). `before` runs once the delete is
 * allowed and before the row goes, with the record as it is: for what a kind keeps outside the
 * resources table and must end elsewhere first (a connector's OAuth tokens at their provider; the
 * row's delete would cascade them away unrevoked). A `before` that throws stops the delete.
 */
export async function removeResource(
  e: ResourceEngine,
  p: Principal,
  kind: AnyKind,
  address: Address,
  before?: (record: ResourceRecord) => Promise<void>,
): Promise<string> {
  const row = await visibleRow(e.db, p, kind, address)
  if (!canOnResource(p, kind, 'delete', rowMeta(row)))
    throw forbidden(`not allowed to delete ${describeAddress(kind, address)}`)
  if (before !== undefined) await before(toRecord(kind, row))
  await e.db.query(sql.unsafe`delete from resources where id = ${row.id}::uuid`)
  await announceChange(e, kind, row, null)
  e.log.info({ kind: kind.kind, id: row.id, by: p.userId }, 'resource deleted')
  return row.id
}
