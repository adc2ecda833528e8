import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto'
import { Type as T, type Static } from '@sinclair/typebox'
import { secretAad } from '../kernel/crypto.ts'
import { connectorKind } from '../kinds/connector/kind.ts'
import { AppError } from '../kernel/errors.ts'
import { sql, transaction } from '../platform/db.ts'
import { guardedFetch } from '../platform/outbound-http.ts'
import { anyRows, maybeRow, rowType } from '../platform/typed-rows.ts'
import { attemptTimeoutMs, outboundDeps, outboundPolicy, type ConnectorDeps, type ConnectorRecord } from './deps.ts'
import { CALLBACK_PATH, NONCE_COOKIE } from './routes.ts'
import { secretValue } from './secrets.ts'

/*
 * OAuth 2 authorization-code flow with PKCE (S256) for connectors with `auth.type: oauth2`.
 * A user starts a flow for a connector; the platform answers the provider's
 * authorization URL carrying a random single-use `state`, and (OAUTH_BIND_BROWSER_SESSION, on by
 * default) sets an HttpOnly nonce cookie whose hash is stored with the state. The callback is
 * accepted only with that state, before it expires (OAUTH_STATE_TTL_SECONDS), from the browser
 * holding the cookie: an attacker who sends a victim his own callback link (account-linking CSRF)
 * fails, because the victim's browser has no matching cookie. The code is exchanged with the PKCE
 * verifier; the tokens are stored encrypted per user and connector, refreshed when they expire, and
 * revoked at the provider (RFC 7009) when the user disconnects or the connector is deleted. Every request to the provider goes
 * through the guarded outbound client like the connector's own calls.
 */
/** A token this close to its expiry is refreshed before use. */
const EXPIRY_MARGIN_MS = 30_000

const b64url = (b: Buffer): string => b.toString('base64url')
const sha256hex = (s: string): string => createHash('sha256').update(s).digest('hex')
const oauthError = (status: number, code: string, detail: string) => new AppError(status, code, detail)

const FLOW_AAD = (state: string) => secretAad('connector_oauth_flow', state, 'code_verifier')
const TOKEN_AAD = (id: string, field: string) => secretAad('connector_oauth_token', id, field)

const FlowRow = rowType(
  T.Object(
    {
      state: T.String(),
      nonce_hash: T.Union([T.String(), T.Null()]),
      user_id: T.String(),
      connector_id: T.String(),
      code_verifier: T.String(),
      redirect_uri: T.String(),
      expired: T.Boolean(),
    },
    { title: 'oauth flow' },
  ),
)
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

function settings(connector: ConnectorRecord) {
  const o = connector.auth.oauth2
  if (connector.auth.type !== 'oauth2' || o === undefined)
    throw oauthError(
      422,
      'connector.not_oauth2',
      `connector ${connector.namespace}/${connector.name} does not use OAuth 2`,
    )
  return o
}

export function redirectUriOf(d: Pick<ConnectorDeps, 'config'>, connector: ConnectorRecord): string {
  const o = settings(connector)
  if (o.redirect_uri !== undefined) return o.redirect_uri
  return d.config.DOMAIN !== ''
    ? `https://${d.config.DOMAIN}${CALLBACK_PATH}`
    : `http://localhost:${String(d.config.PORT)}${CALLBACK_PATH}`
}

export interface StartedFlow {
  authorization_url: string
  state: string
  expires_in: number
  /** The Set-Cookie value binding the flow to this browser (absent when binding is off). */
  cookie?: string
}

export async function startFlow(d: ConnectorDeps, userId: string, connector: ConnectorRecord): Promise<StartedFlow> {
  const o = settings(connector)
  const state = b64url(randomBytes(32))
  const verifier = b64url(randomBytes(48))
  const challenge = b64url(createHash('sha256').update(verifier).digest())
  const bind = d.config.OAUTH_BIND_BROWSER_SESSION
  const nonce = bind ? b64url(randomBytes(32)) : null
  const ttl = d.config.OAUTH_STATE_TTL_SECONDS
  const redirectUri = redirectUriOf(d, connector)
  // old flows are dropped as new ones start (no sweeper needed: an expired flow is refused anyway)
  await d.db.query(sql.unsafe`delete from connector_oauth_flows where expires_at < now()`)
  await d.db
    .query(sql.unsafe`insert into connector_oauth_flows (state, nonce_hash, user_id, connector_id, code_verifier, redirect_uri, expires_at)
    values (${state}, ${nonce === null ? null : sha256hex(nonce)}, ${userId}::uuid, ${connector.id}::uuid, ${d.box.encrypt(verifier, FLOW_AAD(state))}, ${redirectUri},
      now() + make_interval(secs => ${ttl}))`)
  const url = new URL(o.authorization_url)
  url.searchParams.set('response_type', 'code')
  url.searchParams.set('client_id', o.client_id)
  url.searchParams.set('redirect_uri', redirectUri)
  const scopes = o.scopes ?? []
  if (scopes.length > 0) url.searchParams.set('scope', scopes.join(' '))
  url.searchParams.set('state', state)
  url.searchParams.set('code_challenge', challenge)
  url.searchParams.set('code_challenge_method', 'S256')
  return {
    authorization_url: url.toString(),
    state,
    expires_in: ttl,
    ...(nonce === null
      ? {}
      : {
          cookie: `${NONCE_COOKIE}=${nonce}; Path=${CALLBACK_PATH}; Max-Age=${String(ttl)}; HttpOnly; Secure; SameSite=Lax`,
        }),
  }
}

/** The Set-Cookie that removes the nonce once the callback has used it. */
export const clearNonceCookie = (): string =>
  `${NONCE_COOKIE}=; Path=${CALLBACK_PATH}; Max-Age=0; HttpOnly; Secure; SameSite=Lax`

interface TokenAnswer {
  access_token: string
  refresh_token?: string
  token_type?: string
  expires_in?: number
  scope?: string
}

/** A POST to the provider's token endpoint (client_secret_post when the connector names a secret). */
const clientSecretOf = async (d: ConnectorDeps, connector: ConnectorRecord): Promise<string | null> =>
  connector.auth.secret === undefined ? null : secretValue(d, connector, connector.auth.secret)

async function tokenRequest(
  d: ConnectorDeps,
  connector: ConnectorRecord,
  form: Record<string, string>,
  clientSecret: string | null,
): Promise<TokenAnswer> {
  const o = settings(connector)
  const body = new URLSearchParams({ ...form, client_id: o.client_id })
  if (clientSecret !== null) body.set('client_secret', clientSecret)
  const res = await guardedFetch(
    o.token_url,
    {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: body.toString(),
      timeoutMs: attemptTimeoutMs(d.config, connector.timeout_seconds),
      ...outboundPolicy(d.config),
      maxRedirects: 0,
    },
    outboundDeps(d),
  )
  let parsed: Record<string, unknown> = {}
  try {
    parsed = JSON.parse(res.body.toString('utf8')) as Record<string, unknown>
  } catch {
    parsed = {}
  }
  if (res.status < 200 || res.status >= 300 || typeof parsed['access_token'] !== 'string') {
    const why = typeof parsed['error'] === 'string' ? parsed['error'] : `HTTP ${String(res.status)}`
    throw oauthError(502, 'oauth.token_failed', `the provider refused the token request (${why})`)
  }
  return parsed as unknown as TokenAnswer
}

const expiresAt = (t: TokenAnswer): string | null =>
  typeof t.expires_in === 'number' && t.expires_in > 0 ? new Date(Date.now() + t.expires_in * 1000).toISOString() : null

async function storeTokens(
  d: ConnectorDeps,
  userId: string,
  connectorId: string,
  t: TokenAnswer,
  keepRefresh: string | null,
): Promise<{ scope: string | null; expires_at: string | null }> {
  const existing = await maybeRow(
    d.db,
    rowType(T.Object({ id: T.String() })),
    sql.unsafe`select id from connector_oauth_tokens where user_id = ${userId}::uuid and connector_id = ${connectorId}::uuid`,
  )
  const id = existing?.id ?? randomUUID()
  const refresh = t.refresh_token ?? keepRefresh
  const expires = expiresAt(t)
  const scope = t.scope ?? null
  await d.db
    .query(sql.unsafe`insert into connector_oauth_tokens (id, user_id, connector_id, access_token, refresh_token, token_type, scope, expires_at)
    values (${id}::uuid, ${userId}::uuid, ${connectorId}::uuid, ${d.box.encrypt(t.access_token, TOKEN_AAD(id, 'access_token'))},
      ${refresh === null ? null : d.box.encrypt(refresh, TOKEN_AAD(id, 'refresh_token'))}, ${t.token_type ?? 'bearer'}, ${scope}, ${expires}::timestamptz)
    on conflict (user_id, connector_id) do update set access_token = excluded.access_token, refresh_token = excluded.refresh_token,
      token_type = excluded.token_type, scope = coalesce(excluded.scope, connector_oauth_tokens.scope), expires_at = excluded.expires_at, updated_at = now()`)
  return { scope, expires_at: expires }
}

function sameNonce(cookie: string | undefined, hash: string): boolean {
  if (cookie === undefined || cookie === '') return false
  const a = Buffer.from(sha256hex(cookie), 'hex')
  const b = Buffer.from(hash, 'hex')
  return a.length === b.length && timingSafeEqual(a, b)
}

/**
 * The provider's redirect back. Checks, in order: a known unexpired state; the browser's nonce
 * cookie (when binding is on); then consumes the state (single use) and exchanges the code.
 */
export async function finishFlow(
  d: ConnectorDeps,
  q: { state?: string; code?: string; error?: string },
  cookieNonce: string | undefined,
): Promise<{ connector: ConnectorRecord; scope: string | null; expires_at: string | null }> {
  if (q.state === undefined || q.state === '')
    throw oauthError(400, 'oauth.invalid_state', 'the callback carries no state')
  const flow = await maybeRow(
    d.db,
    FlowRow,
    sql.unsafe`select state, nonce_hash, user_id, connector_id, code_verifier, redirect_uri, expires_at < now() as expired
    from connector_oauth_flows where state = ${q.state}`,
  )
  if (flow === null || flow.expired)
    throw oauthError(400, 'oauth.invalid_state', 'unknown or expired OAuth state: start the connection again')
  if (flow.nonce_hash !== null && !sameNonce(cookieNonce, flow.nonce_hash)) {
    throw oauthError(403, 'oauth.browser_mismatch', 'this OAuth callback belongs to a flow started in another browser')
  }
  const consumed = await d.db.query(sql.unsafe`delete from connector_oauth_flows where state = ${flow.state}`)
  if (consumed.rowCount === 0) throw oauthError(400, 'oauth.invalid_state', 'the OAuth state was already used')
  if (q.error !== undefined) throw oauthError(400, 'oauth.denied', `the provider answered ${q.error}`)
  if (q.code === undefined || q.code === '')
    throw oauthError(400, 'oauth.invalid_state', 'the callback carries no code')
  const connector = (await d.resources.byId(connectorKind, flow.connector_id)) as ConnectorRecord | null
  if (connector === null) throw oauthError(400, 'oauth.invalid_state', 'the connector of this flow no longer exists')
  const verifier = d.box.decrypt(flow.code_verifier, FLOW_AAD(flow.state))
  const tokens = await tokenRequest(
    d,
    connector,
    { grant_type: 'authorization_code', code: q.code, redirect_uri: flow.redirect_uri, code_verifier: verifier },
    await clientSecretOf(d, connector),
  )
  const stored = await storeTokens(d, flow.user_id, connector.id, tokens, null)
  d.log.info({ connector: `${connector.namespace}/${connector.name}`, user: flow.user_id }, 'connector OAuth connected')
  return { connector, ...stored }
}

/**
 * The user's access token for the connector, refreshed first when it expires within 30 s. The
 * row is locked while refreshing, so two calls at once refresh once (providers that rotate refresh
 * tokens would refuse the second).
 */
export async function accessToken(d: ConnectorDeps, userId: string, connector: ConnectorRecord): Promise<string> {
  settings(connector)
  const select = (
    lock: boolean,
  ) => sql.unsafe`select id, access_token, refresh_token, scope, expires_at, updated_at from connector_oauth_tokens
    where user_id = ${userId}::uuid and connector_id = ${connector.id}::uuid ${lock ? sql.unsafe`for update` : sql.unsafe``}`
  const fresh = (row: { expires_at: string | null }) =>
    row.expires_at === null || Date.parse(row.expires_at) - Date.now() > EXPIRY_MARGIN_MS
  const notConnected = () =>
    oauthError(
      409,
      'connector.oauth_not_connected',
      `connect your account first: POST /api/v1/connectors/${connector.namespace}/${connector.name}/oauth/start`,
    )
  const seen = await maybeRow(d.db, TokenRow, select(false))
  if (seen === null) throw notConnected()
  if (fresh(seen)) return d.box.decrypt(seen.access_token, TOKEN_AAD(seen.id, 'access_token'))
  // resolved before the transaction: the resource engine reads on its own connections
  const clientSecret = await clientSecretOf(d, connector)
  return transaction(d.db, async (tx) => {
    const row = await maybeRow(tx, TokenRow, select(true))
    if (row === null) throw notConnected()
    // another call may have refreshed while this one waited for the lock
    if (fresh(row)) return d.box.decrypt(row.access_token, TOKEN_AAD(row.id, 'access_token'))
    if (row.refresh_token === null)
      throw oauthError(
        409,
        'connector.oauth_not_connected',
        'the OAuth token expired and there is no refresh token: connect again',
      )
    const refresh = d.box.decrypt(row.refresh_token, TOKEN_AAD(row.id, 'refresh_token'))
    const t = await tokenRequest(d, connector, { grant_type: 'refresh_token', refresh_token: refresh }, clientSecret)
    const next = t.refresh_token ?? refresh
    await tx.query(sql.unsafe`update connector_oauth_tokens set access_token = ${d.box.encrypt(t.access_token, TOKEN_AAD(row.id, 'access_token'))},
      refresh_token = ${d.box.encrypt(next, TOKEN_AAD(row.id, 'refresh_token'))}, expires_at = ${expiresAt(t)}::timestamptz,
      scope = coalesce(${t.scope ?? null}, scope), updated_at = now() where id = ${row.id}::uuid`)
    d.log.info(
      { connector: `${connector.namespace}/${connector.name}`, user: userId },
      'connector OAuth token refreshed',
    )
    return t.access_token
  })
}

export async function tokenStatus(d: ConnectorDeps, userId: string, connector: ConnectorRecord) {
  const row = await maybeRow(
    d.db,
    TokenRow,
    sql.unsafe`select id, access_token, refresh_token, scope, expires_at, updated_at from connector_oauth_tokens
    where user_id = ${userId}::uuid and connector_id = ${connector.id}::uuid`,
  )
  return {
    connected: row !== null,
    scope: row?.scope ?? null,
    expires_at: row?.expires_at ?? null,
    has_refresh_token: row !== null && row.refresh_token !== null,
    updated_at: row?.updated_at ?? null,
  }
}

const TokenPair = rowType(
  T.Object(
    { id: T.String(), access_token: T.String(), refresh_token: T.Union([T.String(), T.Null()]) },
    { title: 'oauth token pair' },
  ),
)
type Tokens = Static<typeof TokenPair.schema>

/**
 * RFC 7009 revocation of one stored token pair: the refresh token first (which also ends its
 * access tokens at most providers), then the access token. Best effort: a provider that is down or
 * refuses must not keep anyone from removing the connection; answers whether both were accepted
 * (false as well when the connector names no revocation URL).
 */
async function revokeAtProvider(
  d: ConnectorDeps,
  connector: ConnectorRecord,
  row: Tokens,
  clientSecret: string | null,
): Promise<boolean> {
  const o = connector.auth.oauth2
  if (o?.revocation_url === undefined) return false
  const tokens: [string, string][] = []
  if (row.refresh_token !== null)
    tokens.push([d.box.decrypt(row.refresh_token, TOKEN_AAD(row.id, 'refresh_token')), 'refresh_token'])
  tokens.push([d.box.decrypt(row.access_token, TOKEN_AAD(row.id, 'access_token')), 'access_token'])
  let revoked = true
  for (const [token, hint] of tokens) {
    try {
      const body = new URLSearchParams({ token, token_type_hint: hint, client_id: o.client_id })
      if (clientSecret !== null) body.set('client_secret', clientSecret)
      const res = await guardedFetch(
        o.revocation_url,
        {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: body.toString(),
          timeoutMs: attemptTimeoutMs(d.config, connector.timeout_seconds),
          ...outboundPolicy(d.config),
          maxRedirects: 0,
        },
        outboundDeps(d),
      )
      if (res.status !== 200) revoked = false
    } catch (err) {
      revoked = false
      d.log.warn({ err, connector: `${connector.namespace}/${connector.name}` }, 'OAuth token revocation failed')
    }
  }
  return revoked
}

/** The user's disconnect: the tokens are deleted here, then revoked at the provider. */
export async function disconnect(
  d: ConnectorDeps,
  userId: string,
  connector: ConnectorRecord,
): Promise<{ revoked: boolean }> {
  const row = await maybeRow(
    d.db,
    TokenRow,
    sql.unsafe`delete from connector_oauth_tokens where user_id = ${userId}::uuid and connector_id = ${connector.id}::uuid
    returning id, access_token, refresh_token, scope, expires_at, updated_at`,
  )
  if (row === null) throw oauthError(404, 'connector.oauth_not_found', 'no OAuth connection to remove')
  const clientSecret = await clientSecretOf(d, connector).catch(() => null)
  return { revoked: await revokeAtProvider(d, connector, row, clientSecret) }
}

/** Revocations in flight at once when a connector with many connected users is deleted. */
const REVOKE_CONCURRENCY = 4

/**
 * The connector is being deleted: every user's tokens for it are revoked at the provider and
 * removed. Runs before the resource row goes (the resource engine's beforeRemove hook) because
 * the row's delete would cascade the tokens away unrevoked, and because the client secret is read
 * through the connector. The rows are taken out first, in one statement, so a token cannot be used
 * or refreshed while it is being revoked; revocation stays best effort (the delete goes on).
 */
export async function revokeConnectorTokens(
  d: ConnectorDeps,
  connector: ConnectorRecord,
): Promise<{ users: number; revoked: number }> {
  const all = await anyRows(
    d.db,
    TokenPair,
    sql.unsafe`delete from connector_oauth_tokens where connector_id = ${connector.id}::uuid returning id, access_token, refresh_token`,
  )
  // flows still open for it could otherwise complete after the revocation (until the row is gone)
  await d.db.query(sql.unsafe`delete from connector_oauth_flows where connector_id = ${connector.id}::uuid`)
  if (all.length === 0) return { users: 0, revoked: 0 }
  const clientSecret =
    connector.auth.oauth2?.revocation_url === undefined ? null : await clientSecretOf(d, connector).catch(() => null)
  let revoked = 0
  for (let i = 0; i < all.length; i += REVOKE_CONCURRENCY) {
    const done = await Promise.all(
      all.slice(i, i + REVOKE_CONCURRENCY).map((row) => revokeAtProvider(d, connector, row, clientSecret)),
    )
    revoked += done.filter(Boolean).length
  }
  d.log.info(
    { connector: `${connector.namespace}/${connector.name}`, users: all.length, revoked },
    'connector deleted: OAuth tokens revoked and removed',
  )
  return { users: all.length, revoked }
}
