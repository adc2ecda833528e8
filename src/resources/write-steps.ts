import { createHash } from 'node:crypto'
import { UniqueIntegrityConstraintViolationError } from 'slonik'
import { can, type Principal } from '../auth/principal.ts'
import { conflict, forbidden } from '../kernel/errors.ts'
import { sql, transaction, type Db } from '../platform/db.ts'
import { mayCreateIn } from './namespace-policy.ts'
import { claimNamespace, standingIn } from './namespace-store.ts'
import { canonicalJson } from './canonical-json.ts'
import type { ResourceEngine } from './engine.ts'
import type { AnyKind } from './kind.ts'
import { addressKey } from './row-cache.ts'
import type { Row } from './row.ts'
import { resourcePermission, type ResourceMeta } from './permissions.ts'

/** The transaction connection of `db.transaction`. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0]

/** Checksum of the public fields; secrets are compared by decrypting (apply), so no digest of them is stored. */
export function checksumOf(spec: Record<string, unknown>, isActive: boolean): string {
  return createHash('sha256')
    .update(canonicalJson({ spec, is_active: isActive }))
    .digest('hex')
}

export const versionedFields = (kind: AnyKind, spec: Record<string, unknown>) =>
  Object.fromEntries(kind.versioned.map((f) => [f, spec[f] ?? null]))

export function mapUnique(err: unknown, what: string): never {
  if (err instanceof UniqueIntegrityConstraintViolationError)
    throw conflict(`${what} already exists`, 'resource.exists')
  throw err
}

export async function clearExclusiveFlags(tx: Db | Tx, kind: AnyKind, id: string, spec: Record<string, unknown>) {
  for (const flag of kind.exclusiveFlags) {
    if (spec[flag] !== true) continue
    await tx.query(sql.unsafe`
      update resources set spec = jsonb_set(spec, ${sql.array([flag], 'text')}, 'false'::jsonb), updated_at = now()
      where kind = ${kind.kind} and id <> ${id}::uuid and (spec ->> ${flag}) = 'true'`)
  }
}

/**
 * Refuses a create in a namespace the principal may not use, and claims the namespace for the
 * principal when nobody holds it yet (in the resource's own transaction: two first writers race
 * on the namespaces primary key, the loser is checked again like anyone else).
 *
 * `admitted`: within one outer transaction (a config apply writing many resources), the
 * namespaces already admitted for a principal. The transaction holds what it claimed and nothing
 * else changes a namespace's owner or members under it, so the first answer stands for the rest
 * (a thousand resources in one namespace ask once, not a thousand times).
 */
export async function admitToNamespace(
  tx: Tx,
  p: Principal,
  kind: AnyKind,
  m: ResourceMeta,
  admitted?: Set<string>,
): Promise<void> {
  const anyNamespace = can(p, resourcePermission(kind, 'create', m, 'all'))
  const memo = `${p.userId} ${anyNamespace ? 'all' : 'own'} ${m.namespace}`
  if (admitted?.has(memo) === true) return
  let standing = await standingIn(tx, m.namespace, p.userId)
  if (!standing.exists) {
    if (await claimNamespace(tx, m.namespace, p.userId)) return void admitted?.add(memo)
    standing = await standingIn(tx, m.namespace, p.userId) // claimed by someone else a moment ago
  }
  if (!mayCreateIn(anyNamespace, standing)) {
    throw forbidden(
      `not allowed to create in namespace ${m.namespace}: it belongs to another user (its owner or an admin can grant it to you)`,
      'namespace.forbidden',
    )
  }
  admitted?.add(memo)
}

/**
 * Tells the row cache (every process's) what a committed write changed: the row, or the whole kind
 * when the write also cleared an exclusive flag (`is_default`) on other rows of it.
 */
export async function announceChange(
  e: ResourceEngine,
  kind: AnyKind,
  row: Row,
  spec: Record<string, unknown> | null,
): Promise<void> {
  const clearedOthers = spec !== null && kind.exclusiveFlags.some((f) => spec[f] === true)
  const announce = () =>
    e.rows.changed(
      kind,
      clearedOthers ? undefined : { id: row.id, addresses: [addressKey(kind, row.namespace, row.name)] },
    )
  if (e.outer === undefined) await announce()
  else e.outer.deferred.push(announce)
}

/**
 * A write's statements in one transaction: its own, or the caller's when the engine writes inside
 * an outer one (`ResourceEngine.outer`), where a failure rolls back the caller's whole work.
 */
export function writeTransaction<R>(e: ResourceEngine, work: (tx: Tx) => Promise<R>): Promise<R> {
  return e.outer === undefined ? transaction(e.db, work) : work(e.outer.tx)
}
