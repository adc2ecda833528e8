import { Value } from '@sinclair/typebox/value'
import type { Principal } from '../auth/principal.ts'
import { createResource } from './create.ts'
import type { ResourceEngine } from './engine.ts'
import { describeAddress, findRow } from './find-row.ts'
import type { AnyKind } from './kind.ts'
import { openSecret, splitSecrets } from './secrets.ts'
import type { Address, ApplyAction, ResourceRecord } from './service.ts'
import { updateResource } from './update.ts'
import { checksumOf } from './write-steps.ts'

/** Create or update to match `body`, skipping unchanged resources by checksum; refuses resources managed by someone else unless forced. */
export async function applyResource(
  e: ResourceEngine,
  p: Principal,
  kind: AnyKind,
  body: Record<string, unknown>,
  options: { managedBy: string; force?: boolean; dryRun?: boolean },
): Promise<{ action: ApplyAction; record?: ResourceRecord; warning?: string }> {
  const namespace = kind.addressing === 'namespaced' ? String(body['namespace'] ?? 'default') : ''
  const address: Address =
    kind.addressing === 'namespaced' ? { namespace, name: String(body['name']) } : { name: String(body['name']) }
  const row = await findRow(e.db, kind, address)
  if (row === null) {
    if (options.dryRun === true) return { action: 'created' as const }
    return {
      action: 'created' as const,
      record: await createResource(e, p, kind, body, { managedBy: options.managedBy }),
    }
  }
  if (row.managed_by !== options.managedBy && options.force !== true) {
    return {
      action: 'unchanged' as const,
      warning: `${describeAddress(kind, address)} exists and is not managed by ${options.managedBy}; left as it is`,
    }
  }
  const { namespace: _n, name: _name, is_active: activeIn, ...rest } = body
  const desired = Value.Default(kind.spec, structuredClone(rest)) as Record<string, unknown>
  const { spec, secretInput } = splitSecrets(kind, desired)
  const secretsSame = kind.secrets.every(
    (k) =>
      (secretInput[k] ?? null) ===
      (row.secrets[k] === undefined ? null : openSecret(e.box, kind, row.id, k, row.secrets[k])),
  )
  const isActive = activeIn !== false
  if (secretsSame && row.checksum === checksumOf(spec, isActive)) return { action: 'unchanged' as const }
  if (options.dryRun === true) return { action: 'updated' as const }
  const patch: Record<string, unknown> = { ...desired, is_active: isActive }
  return {
    action: 'updated' as const,
    record: await updateResource(e, p, kind, address, patch, { managedBy: options.managedBy }),
  }
}
