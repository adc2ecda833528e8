import { Kvm, type KV } from '@nats-io/kv'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'

/*
 * The NATS KV bucket AUTH_CACHE holds what a request needs to know about its caller, so a warm
 * request costs one KV read and no Postgres query:
 *   u.<user id>   → {email, active, permissions}      (permissions = union of the user's roles)
 *   k.<key hash>  → {id, user_id, permissions, expires_at}
 * Every change to roles, grants, membership, a user or a key deletes the affected entries; a KV
 * delete is seen by every process at once, so a revoked role or key stops working on the next
 * request everywhere. Fills are compare-and-set against the revision seen before the database
 * read, so a fill racing an invalidation loses instead of writing the old value back.
 * Execution tokens (src/auth/tokens.ts) are checked against the job's live entry in JOB_STATE,
 * read on every request and never cached: that read is what revokes the token the moment the
 * execution ends.
 */
export interface CachedUser {
  email: string
  active: boolean
  permissions: string[]
}

export interface CachedKey {
  id: string
  user_id: string
  permissions: string[]
  expires_at: string | null
}

/** What an execution token's check needs of a job (a subset of the JOB_STATE entry). */
export interface ExecutionState {
  status: string
  attempts: number
  user_id: string | null
}

export interface PrincipalCache {
  user(id: string, load: () => Promise<CachedUser | null>): Promise<CachedUser | null>
  key(hash: string, load: () => Promise<CachedKey | null>): Promise<CachedKey | null>
  invalidateUsers(ids: readonly string[]): Promise<void>
  invalidateKeys(hashes: readonly string[]): Promise<void>
  /** The live state of a job, read from JOB_STATE each time; null when unknown or no bucket was given. */
  execution(jobId: string): Promise<ExecutionState | null>
}

export async function openPrincipalCache(nc: NatsConnection, names: NatsNames): Promise<PrincipalCache> {
  const kvm = new Kvm(nc)
  return createPrincipalCache(await kvm.open(names.bucket('AUTH_CACHE')), await kvm.open(names.bucket('JOB_STATE')))
}

export function createPrincipalCache(kv: KV, jobs?: KV): PrincipalCache {
  async function through<V>(key: string, load: () => Promise<V | null>): Promise<V | null> {
    const entry = await kv.get(key)
    if (entry !== null && entry.operation === 'PUT' && entry.value.length > 0) return entry.json<V>()
    const seen = entry?.revision ?? 0
    const value = await load()
    // Unknown users/keys are not cached: they have no invalidation event that would clear them.
    if (value !== null) {
      const bytes = new TextEncoder().encode(JSON.stringify(value))
      // Losing the race (someone invalidated or filled meanwhile) is fine: this request still uses what it read.
      await (seen === 0 ? kv.create(key, bytes) : kv.update(key, bytes, seen)).catch(() => undefined)
    }
    return value
  }
  const drop = async (keys: string[]): Promise<void> => {
    await Promise.all(keys.map((k) => kv.delete(k)))
  }
  return {
    user: (id, load) => through(`u.${id}`, load),
    key: (hash, load) => through(`k.${hash}`, load),
    invalidateUsers: (ids) => drop(ids.map((id) => `u.${id}`)),
    invalidateKeys: (hashes) => drop(hashes.map((h) => `k.${h}`)),
    async execution(jobId) {
      const entry = jobs === undefined ? null : await jobs.get(jobId)
      if (entry === null || entry.operation !== 'PUT' || entry.length === 0) return null
      const s = entry.json<Partial<ExecutionState>>()
      return { status: String(s.status), attempts: Number(s.attempts), user_id: typeof s.user_id === 'string' ? s.user_id : null }
    },
  }
}
