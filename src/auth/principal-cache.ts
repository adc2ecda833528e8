import { randomUUID } from 'node:crypto'
import { Kvm, type KV } from '@nats-io/kv'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { followChanges, onConnectionGap } from '../platform/change-feed.ts'
import { AuthChangeCheck } from './auth-change.ts'
import { kvKeys } from '../platform/jetstream.ts'

/*
 * The NATS KV bucket AUTH_CACHE holds what a request needs to know about its caller, so a warm
 * request costs no Postgres query (and, with the local tier below, no KV read either):
 *   u.<user id>   → {email, active, permissions, revoked_sessions}   (permissions = union of the
 *                   user's roles; revoked_sessions = the logged-out sessions whose access tokens may
 *                   still be unexpired, so logout revokes them with no query on the request path)
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
  /** Session ids (refresh-token families) logged out or revoked whose refresh tokens have not expired yet; absent in entries written before. */
  revoked_sessions?: string[]
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
  return createPrincipalCache(await kvm.open(names.bucket('AUTH_CACHE')), await kvm.open(names.bucket('JOB_STATE')), {
    nc,
    names,
  })
}

/** Longest a process answers from its own copy of an entry without hearing of it (a bound for a missed change message). */
const LOCAL_MAX_AGE_MS = 60_000

/**
 * With `link`, a warm entry is answered from this process's memory (no KV read): every
 * invalidation deletes the KV entries, drops this process's copies, publishes the keys on
 * `auth.changed` and flushes before it returns — the same ordering argument as the resource
 * cache (src/resources/row-cache.ts): the next request, on any process, arrives after the change
 * was parsed there, so a revoked role or key stops working on the very next request. Copies are
 * also dropped when the NATS connection drops or comes back, and after LOCAL_MAX_AGE_MS.
 */
export function createPrincipalCache(
  kv: KV,
  jobs?: KV,
  link?: { nc: NatsConnection; names: NatsNames },
): PrincipalCache {
  const local = new Map<string, { value: unknown; at: number }>()
  // Bumped by every invalidation of a key: a fill that started before it does not keep its value locally.
  const generation = new Map<string, number>()
  const origin = randomUUID()
  const subject = link?.names.subject('auth.changed')
  const forget = (keys: readonly string[]) => {
    for (const k of keys) {
      local.delete(k)
      generation.set(k, (generation.get(k) ?? 0) + 1)
    }
  }
  if (link !== undefined && subject !== undefined) {
    followChanges(link.nc, subject, AuthChangeCheck, origin, (change) => {
      if (change.all === true) forget([...local.keys()])
      else if (change.keys !== undefined) forget(change.keys)
    })
    onConnectionGap(link.nc, () => forget([...local.keys()]))
  }
  const keep = (key: string, gen: number, value: unknown) => {
    if (link !== undefined && (generation.get(key) ?? 0) === gen) local.set(key, { value, at: Date.now() })
  }

  async function through<V>(key: string, load: () => Promise<V | null>): Promise<V | null> {
    const mine = local.get(key)
    if (mine !== undefined && Date.now() - mine.at < LOCAL_MAX_AGE_MS) return mine.value as V
    const gen = generation.get(key) ?? 0
    const entry = await kv.get(key)
    if (entry !== null && entry.operation === 'PUT' && entry.value.length > 0) {
      const value = entry.json<V>()
      keep(key, gen, value)
      return value
    }
    const seen = entry?.revision ?? 0
    const value = await load()
    // Unknown users/keys are not cached: they have no invalidation event that would clear them.
    if (value !== null) {
      const bytes = new TextEncoder().encode(JSON.stringify(value))
      // Losing the race (someone invalidated or filled meanwhile) is fine: this request still uses what it read.
      await (seen === 0 ? kv.create(key, bytes) : kv.update(key, bytes, seen)).catch(() => undefined)
      keep(key, gen, value)
    }
    return value
  }
  const drop = async (keys: string[]): Promise<void> => {
    forget(keys)
    await Promise.all(keys.map((k) => kv.delete(k)))
    if (link !== undefined && subject !== undefined && keys.length > 0) {
      link.nc.publish(subject, JSON.stringify({ o: origin, keys }))
      await link.nc.flush()
    }
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
      return {
        status: String(s.status),
        attempts: Number(s.attempts),
        user_id: typeof s.user_id === 'string' ? s.user_id : null,
      }
    },
  }
}

/**
 * For changes to users, roles or keys made outside the platform (an operator's SQL, tests): every
 * AUTH_CACHE entry is deleted and every process drops its local copies, so the next request of
 * every caller reads Postgres again.
 */
export async function forgetAllPrincipals(nc: NatsConnection, names: NatsNames): Promise<void> {
  const kv = await new Kvm(nc).open(names.bucket('AUTH_CACHE'))
  await Promise.all((await kvKeys(kv)).map((k) => kv.delete(k)))
  nc.publish(names.subject('auth.changed'), JSON.stringify({ o: 'outside', all: true }))
  await nc.flush()
}
