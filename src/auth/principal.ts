import { Type as T } from '@sinclair/typebox'
import { sql, type Db } from '../platform/db.ts'
import { maybeRow, rowType } from '../platform/typed-rows.ts'
import { unauthorized } from '../kernel/errors.ts'
import { isUuid } from '../kernel/uuid.ts'
import { EXECUTION_SCOPE } from './execution-scope.ts'
import { grantsOf, hasPermission } from './permissions.ts'
import type { Caller } from './caller.ts'
import type { CachedKey, CachedUser, PrincipalCache } from './principal-cache.ts'

/** Who is acting, with their live permissions: what every check at execution time looks at. */
export interface Principal {
  userId: string
  email: string
  permissions: readonly string[]
  /** Set when the caller used an API key: its id (permissions are then key ∩ owner). */
  apiKeyId?: string
  /** Set when the caller is a function's execution token: the job id (permissions are then user ∩ EXECUTION_SCOPE). */
  executionId?: string
}

export const can = (p: Principal, permission: string): boolean => hasPermission(p.permissions, permission)

/*
 * The cache is attached per database pool rather than passed to every caller of loadPrincipal, so
 * every service that already resolves principals (resources, jobs, identity) gets it unchanged.
 */
const caches = new WeakMap<Db, PrincipalCache>()

export function attachPrincipalCache(db: Db, cache: PrincipalCache): void {
  caches.set(db, cache)
}

export function principalCacheOf(db: Db): PrincipalCache | undefined {
  return caches.get(db)
}

/* Rows as they come back (timestamps as ISO strings, jsonb parsed: src/platform/db.ts). Grants stay `unknown`-valued: grantsOf keeps the `true` ones. */
const StoredGrants = T.Record(T.String(), T.Unknown())
const UserGrantsRow = rowType(
  T.Object(
    { email: T.String(), is_active: T.Boolean(), grants: T.Array(StoredGrants), revoked_sessions: T.Array(T.String()) },
    { title: 'user grants' },
  ),
)
const KeyRow = rowType(
  T.Object(
    { id: T.String(), user_id: T.String(), permissions: StoredGrants, expires_at: T.Union([T.String(), T.Null()]) },
    { title: 'API key' },
  ),
)

export async function loadUserRow(db: Db, userId: string): Promise<CachedUser | null> {
  const row = await maybeRow(
    db,
    UserGrantsRow,
    sql.unsafe`
    select u.email, u.is_active,
           coalesce(jsonb_agg(r.permissions) filter (where r.id is not null), '[]'::jsonb) as grants,
           -- a revoked family's access tokens live at most as long as its refresh tokens (minutes against days)
           array(select distinct t.family_id::text from refresh_tokens t
                 where t.user_id = u.id and t.revoked_at is not null and t.expires_at > now()) as revoked_sessions
    from users u
    left join user_roles ur on ur.user_id = u.id
    left join roles r on r.id = ur.role_id
    where u.id = ${userId}::uuid
    group by u.id`,
  )
  if (row === null) return null
  const grants = row.grants.flatMap(grantsOf)
  return {
    email: row.email,
    active: row.is_active,
    permissions: [...new Set(grants)],
    revoked_sessions: row.revoked_sessions,
  }
}

async function loadKeyRow(db: Db, hash: string): Promise<CachedKey | null> {
  const row = await maybeRow(
    db,
    KeyRow,
    sql.unsafe`select id, user_id, permissions, expires_at from api_keys where key_hash = ${hash}`,
  )
  if (row === null) return null
  return { ...row, permissions: grantsOf(row.permissions) }
}

/**
 * What a key may do: its own grants that the owner also holds, plus the owner's grants that the
 * key covers. Exact for nested wildcards; grants that merely overlap are dropped (never widened).
 */
export function intersectGrants(key: readonly string[], owner: readonly string[]): string[] {
  const out = new Set<string>()
  for (const k of key) if (hasPermission(owner, k)) out.add(k)
  for (const o of owner) if (hasPermission(key, o)) out.add(o)
  return [...out]
}

// A function of the module rather than a closure made per call: the TypeScript loader names every
// closure assigned to a name, a property definition on each request.
function userOf(db: Db, cache: PrincipalCache | undefined, id: string): Promise<CachedUser | null> {
  return cache === undefined ? loadUserRow(db, id) : cache.user(id, () => loadUserRow(db, id))
}

/**
 * Resolves a verified caller to a principal: the user must still exist and be active, and the
 * permissions are those of its roles now, not when the token was issued. With a cache attached
 * (src/auth/principal-cache.ts) a warm lookup does not touch Postgres.
 */
export async function loadPrincipal(db: Db, caller: Caller): Promise<Principal> {
  const cache = caches.get(db)
  if (caller.via === 'api_key') {
    const hash = caller.keyHash ?? ''
    const key = cache === undefined ? await loadKeyRow(db, hash) : await cache.key(hash, () => loadKeyRow(db, hash))
    if (key === null) throw unauthorized('invalid API key', 'auth.invalid_api_key')
    if (key.expires_at !== null && Date.parse(key.expires_at) <= Date.now())
      throw unauthorized('API key expired', 'auth.api_key_expired')
    const owner = await userOf(db, cache, key.user_id)
    if (owner === null || !owner.active) throw unauthorized('user not found or inactive', 'auth.user_inactive')
    return {
      userId: key.user_id,
      email: owner.email,
      permissions: intersectGrants(key.permissions, owner.permissions),
      apiKeyId: key.id,
    }
  }
  // The gateway already refuses such tokens; checked again because a Caller may come from elsewhere
  // and a non-UUID would otherwise fail inside Postgres as a 500.
  if (!isUuid(caller.sub)) throw unauthorized('invalid token', 'auth.invalid_token')
  const exe = caller.execution
  // Checked before the user: the job's state is read on every request (never cached), so a token
  // whose execution ended is refused on the very next request, on every replica.
  if (exe !== undefined) await checkExecutionLive(cache, caller.sub, exe)
  const row = await userOf(db, cache, caller.sub)
  if (row === null || !row.active) throw unauthorized('user not found or inactive', 'auth.user_inactive')
  // Logout revoked this token's session: the list is part of the cached user (no query here).
  if (caller.sid !== undefined && row.revoked_sessions?.includes(caller.sid) === true)
    throw unauthorized('the session of this token was logged out', 'auth.session_revoked')
  if (exe !== undefined)
    return {
      userId: caller.sub,
      email: row.email,
      permissions: intersectGrants(EXECUTION_SCOPE, row.permissions),
      executionId: exe.id,
    }
  return { userId: caller.sub, email: row.email, permissions: row.permissions }
}

/**
 * An execution token is good only while the attempt it was minted for runs, for the user it runs
 * as. Without a job-state reader (no cache attached) it is refused: failing closed.
 */
async function checkExecutionLive(
  cache: PrincipalCache | undefined,
  sub: string,
  exe: { id: string; attempt: number },
): Promise<void> {
  const job = cache === undefined || !isUuid(exe.id) ? null : await cache.execution(exe.id)
  if (job === null || job.status !== 'running' || job.attempts !== exe.attempt || job.user_id !== sub) {
    throw unauthorized('the execution this token belongs to has ended', 'auth.execution_ended')
  }
}
