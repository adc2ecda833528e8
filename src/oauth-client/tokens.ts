import { randomUUID } from 'node:crypto'
import { Type as T } from '@sinclair/typebox'
import { secretAad } from '../kernel/crypto.ts'
import type { AppError } from '../kernel/errors.ts'
import { sql, transaction } from '../platform/db.ts'
import { anyRows, maybeRow, rowType } from '../platform/typed-rows.ts'
import type { OAuthClientDeps, TokenOwner } from './deps.ts'
import type { TokenAnswer } from './endpoint.ts'

/*
 * The tokens a user obtained for a resource (a connector, an MCP server), one row per user and
 * resource in `connector_oauth_tokens` (migration 0013; `connector_id` is the resource), access and
 * refresh tokens encrypted with the platform's secret box, the row id bound in. `accessToken`
 * refreshes a token about to expire — or one the resource server just refused — with the row
 * locked, so two calls at once refresh once (providers that rotate refresh tokens would refuse
 * the second).
 */
/** A token this close to its expiry is refreshed before use. */
const EXPIRY_MARGIN_MS = 30_000

const TOKEN_AAD = (id: string, field: string) => secretAad('connector_oauth_token', id, field)

const TokenRow = rowType(
  T.Object(
    {
      id: T.String(),
      access_token: T.String(),
      refresh_token: T.Union([T.String(), T.Null()]),
      scope: T.Union([T.String(), T.Null()]),
      expires_at: T.Union([T.String(), T.Null()]),
      updated_at: T.String(),
    },
    { title: 'oauth token' },
  ),
)
const TokenPair = rowType(
  T.Object(
    { id: T.String(), access_token: T.String(), refresh_token: T.Union([T.String(), T.Null()]) },
    { title: 'oauth token pair' },
  ),
)

/** A stored pair, decrypted (for revocation). */
export interface PlainTokens {
  accessToken: string
  refreshToken: string | null
}

const expiresAt = (t: TokenAnswer): string | null =>
  typeof t.expires_in === 'number' && t.expires_in > 0 ? new Date(Date.now() + t.expires_in * 1000).toISOString() : null

export async function storeTokens(
  d: Pick<OAuthClientDeps, 'db' | 'box'>,
  o: TokenOwner,
  t: TokenAnswer,
): Promise<{ scope: string | null; expires_at: string | null }> {
  const existing = await maybeRow(
    d.db,
    rowType(T.Object({ id: T.String() })),
    sql.unsafe`select id from connector_oauth_tokens where user_id = ${o.userId}::uuid and connector_id = ${o.resourceId}::uuid`,
  )
  const id = existing?.id ?? randomUUID()
  const refresh = t.refresh_token ?? null
  const expires = expiresAt(t)
  const scope = t.scope ?? null
  await d.db
    .query(sql.unsafe`insert into connector_oauth_tokens (id, user_id, connector_id, access_token, refresh_token, token_type, scope, expires_at)
    values (${id}::uuid, ${o.userId}::uuid, ${o.resourceId}::uuid, ${d.box.encrypt(t.access_token, TOKEN_AAD(id, 'access_token'))},
      ${refresh === null ? null : d.box.encrypt(refresh, TOKEN_AAD(id, 'refresh_token'))}, ${t.token_type ?? 'bearer'}, ${scope}, ${expires}::timestamptz)
    on conflict (user_id, connector_id) do update set access_token = excluded.access_token, refresh_token = excluded.refresh_token,
      token_type = excluded.token_type, scope = coalesce(excluded.scope, connector_oauth_tokens.scope), expires_at = excluded.expires_at, updated_at = now()`)
  return { scope, expires_at: expires }
}

export interface AccessTokenOptions {
  /** Called before the row is locked (the resource engine reads on its own connections): answers the refresh. */
  refresher: () => Promise<(refreshToken: string) => Promise<TokenAnswer>>
  /** The error for "no usable connection" (`why`: none, or expired without a refresh token). */
  notConnected: (why: 'none' | 'expired') => AppError
  /** The access token the resource server just refused: refreshed even if it has not expired. */
  rejected?: string
  log: Record<string, unknown>
}

/** The user's access token for the resource, refreshed first when it expires within 30 s (or was refused). */
export async function accessToken(
  d: Pick<OAuthClientDeps, 'db' | 'box' | 'log'>,
  o: TokenOwner,
  opts: AccessTokenOptions,
): Promise<string> {
  const select = (
    lock: boolean,
  ) => sql.unsafe`select id, access_token, refresh_token, scope, expires_at, updated_at from connector_oauth_tokens
    where user_id = ${o.userId}::uuid and connector_id = ${o.resourceId}::uuid ${lock ? sql.unsafe`for update` : sql.unsafe``}`
  const plain = (row: { id: string; access_token: string }) =>
    d.box.decrypt(row.access_token, TOKEN_AAD(row.id, 'access_token'))
  const usable = (row: { id: string; access_token: string; expires_at: string | null }) =>
    (row.expires_at === null || Date.parse(row.expires_at) - Date.now() > EXPIRY_MARGIN_MS) &&
    (opts.rejected === undefined || plain(row) !== opts.rejected)
  const seen = await maybeRow(d.db, TokenRow, select(false))
  if (seen === null) throw opts.notConnected('none')
  if (usable(seen)) return plain(seen)
  const refreshWith = await opts.refresher()
  return transaction(d.db, async (tx) => {
    const row = await maybeRow(tx, TokenRow, select(true))
    if (row === null) throw opts.notConnected('none')
    // another call may have refreshed while this one waited for the lock
    if (usable(row)) return plain(row)
    if (row.refresh_token === null) throw opts.notConnected('expired')
    const refresh = d.box.decrypt(row.refresh_token, TOKEN_AAD(row.id, 'refresh_token'))
    const t = await refreshWith(refresh)
    const next = t.refresh_token ?? refresh
    await tx.query(sql.unsafe`update connector_oauth_tokens set access_token = ${d.box.encrypt(t.access_token, TOKEN_AAD(row.id, 'access_token'))},
      refresh_token = ${d.box.encrypt(next, TOKEN_AAD(row.id, 'refresh_token'))}, expires_at = ${expiresAt(t)}::timestamptz,
      scope = coalesce(${t.scope ?? null}, scope), updated_at = now() where id = ${row.id}::uuid`)
    d.log.info({ ...opts.log, user: o.userId }, 'OAuth token refreshed')
    return t.access_token
  })
}

export async function tokenStatus(d: Pick<OAuthClientDeps, 'db'>, o: TokenOwner) {
  const row = await maybeRow(
    d.db,
    TokenRow,
    sql.unsafe`select id, access_token, refresh_token, scope, expires_at, updated_at from connector_oauth_tokens
    where user_id = ${o.userId}::uuid and connector_id = ${o.resourceId}::uuid`,
  )
  return {
    connected: row !== null,
    scope: row?.scope ?? null,
    expires_at: row?.expires_at ?? null,
    has_refresh_token: row !== null && row.refresh_token !== null,
    updated_at: row?.updated_at ?? null,
  }
}

const decrypted = (
  d: Pick<OAuthClientDeps, 'box'>,
  row: { id: string; access_token: string; refresh_token: string | null },
): PlainTokens => ({
  accessToken: d.box.decrypt(row.access_token, TOKEN_AAD(row.id, 'access_token')),
  refreshToken:
    row.refresh_token === null ? null : d.box.decrypt(row.refresh_token, TOKEN_AAD(row.id, 'refresh_token')),
})

/** The user's tokens for the resource, deleted (null when there were none); the caller revokes them. */
export async function takeTokens(d: Pick<OAuthClientDeps, 'db' | 'box'>, o: TokenOwner): Promise<PlainTokens | null> {
  const row = await maybeRow(
    d.db,
    TokenPair,
    sql.unsafe`delete from connector_oauth_tokens where user_id = ${o.userId}::uuid and connector_id = ${o.resourceId}::uuid
    returning id, access_token, refresh_token`,
  )
  return row === null ? null : decrypted(d, row)
}

/**
 * Every user's tokens for the resource, deleted in one statement (so none is used or refreshed
 * while the caller revokes them), and the flows still open for it (they could otherwise complete
 * after the revocation).
 */
export async function takeAllTokens(
  d: Pick<OAuthClientDeps, 'db' | 'box'>,
  resourceId: string,
): Promise<PlainTokens[]> {
  const all = await anyRows(
    d.db,
    TokenPair,
    sql.unsafe`delete from connector_oauth_tokens where connector_id = ${resourceId}::uuid returning id, access_token, refresh_token`,
  )
  await d.db.query(sql.unsafe`delete from connector_oauth_flows where connector_id = ${resourceId}::uuid`)
  return all.map((row) => decrypted(d, row))
}
