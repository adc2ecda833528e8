import { randomUUID } from 'node:crypto'
import { Value } from '@sinclair/typebox/value'
import type { Principal } from '../auth/principal.ts'
import { forbidden, invalid } from '../kernel/errors.ts'
import { sql } from '../platform/db.ts'
import { oneRow } from '../platform/typed-rows.ts'
import type { ResourceEngine } from './engine.ts'
import type { AnyKind } from './kind.ts'
import { canOnResource, type ResourceMeta } from './permissions.ts'
import { ROW_COLUMNS, ResourceRow, toRecord } from './row.ts'
import { sealSecrets, splitSecrets } from './secrets.ts'
import type { ResourceRecord, WriteOptions } from './service.ts'
import { assertAdminFields, assertValid, validationIssues } from './validation.ts'
import {
  admitToNamespace,
  announceChange,
  checksumOf,
  writeTransaction,
  clearExclusiveFlags,
  mapUnique,
  versionedFields,
} from './write-steps.ts'

export async function createResource(
  e: ResourceEngine,
  p: Principal,
  kind: AnyKind,
  body: Record<string, unknown>,
  options: WriteOptions = {},
): Promise<ResourceRecord> {
  const bodyIssues = validationIssues(e.checks(kind).create, body)
  if (bodyIssues.length > 0) throw invalid(`invalid ${kind.kind}`, bodyIssues)
  const { namespace: nsIn, name, is_active: activeIn, ...rest } = body
  const namespace = kind.addressing === 'namespaced' ? String(nsIn ?? 'default') : ''
  const m: ResourceMeta = { namespace, name: String(name), ownerId: p.userId }
  if (!canOnResource(p, kind, 'create', m)) {
    throw kind.adminOnly
      ? forbidden(`${kind.plural} are admin-only`, 'auth.admin_only')
      : forbidden(`not allowed to create ${kind.kind} ${namespace ? `${namespace}/` : ''}${String(name)}`)
  }
  const withDefaults = Value.Default(kind.spec, structuredClone(rest)) as Record<string, unknown>
  await assertValid(e.checks(kind), kind, withDefaults, e.specChecks)
  assertAdminFields(p, kind, 'create', m, Value.Default(kind.spec, {}) as Record<string, unknown>, withDefaults)
  const { spec, secretInput } = splitSecrets(kind, withDefaults)
  const isActive = activeIn !== false
  const checksum = checksumOf(spec, isActive)
  const row = await writeTransaction(e, async (tx) => {
    if (kind.addressing === 'namespaced') await admitToNamespace(tx, p, kind, m, e.outer?.admitted)
    // The id is drawn first, here rather than by Postgres (one round trip less per create): the
    // secrets are sealed against it before the row is written.
    const id = randomUUID()
    const secrets = sealSecrets(e.box, kind, id, {}, secretInput)
    const inserted = await oneRow(
      tx,
      ResourceRow,
      sql.unsafe`
        insert into resources (id, kind, namespace, name, spec, secrets, owner_id, managed_by, checksum, is_active)
        values (${id}::uuid, ${kind.kind}, ${namespace}, ${String(name)}, ${sql.jsonb(spec as never)}, ${sql.jsonb(secrets)},
                ${p.userId}::uuid, ${options.managedBy ?? null}, ${checksum}, ${isActive})
        returning ${ROW_COLUMNS}`,
    )
    if (kind.versioned.length > 0) {
      await tx.query(sql.unsafe`insert into resource_versions (resource_id, version, fields, created_by)
          values (${id}::uuid, 1, ${sql.jsonb(versionedFields(kind, spec) as never)}, ${p.userId}::uuid)`)
    }
    await clearExclusiveFlags(tx, kind, id, spec)
    return inserted
  }).catch((err: unknown) => mapUnique(err, `${kind.kind} ${namespace ? `${namespace}/` : ''}${String(name)}`))
  await announceChange(e, kind, row, spec)
  e.log.info({ kind: kind.kind, namespace, name, by: p.userId }, 'resource created')
  return toRecord(kind, row)
}
