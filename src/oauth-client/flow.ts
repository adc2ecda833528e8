import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { Type as T } from '@sinclair/typebox'
import { secretAad } from '../kernel/crypto.ts'
import { AppError } from '../kernel/errors.ts'
import { sql } from '../platform/db.ts'
import { maybeRow, rowType } from '../platform/typed-rows.ts'
import type { OAuthClientDeps } from './deps.ts'

/*
 * The authorization-code flow with PKCE (S256), the client side, for every feature that connects
 * a user to an authorization server (connectors, MCP servers). Starting answers the authorization
 * URL carrying a random single-use `state` and (OAUTH_BIND_BROWSER_SESSION, on by default) an
 * HttpOnly nonce cookie whose hash is stored with the state. The callback is accepted only with
 * that state, before it expires (OAUTH_STATE_TTL_SECONDS), from the browser holding the cookie: an
 * attacker who sends a victim his own callback link (account-linking CSRF) fails, because the
 * victim's browser has no matching cookie. The state is consumed before anything else happens.
 * Rows: `connector_oauth_flows` (migration 0013), whose `connector_id` is the resource the flow is
 * for (a connector or an MCP server); the verifier is encrypted with the row bound in.
 */
const b64url = (b: Buffer): string => b.toString('base64url')
const sha256hex = (s: string): string => createHash('sha256').update(s).digest('hex')
const FLOW_AAD = (state: string) => secretAad('connector_oauth_flow', state, 'code_verifier')

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

/** The cookie binding a flow to its browser: its name and the callback path it is sent to. */
export interface NonceCookie {
  name: string
  path: string
}

export interface FlowStart {
  userId: string
  resourceId: string
  authorizationUrl: string
  clientId: string
  scopes: readonly string[]
  redirectUri: string
  cookie: NonceCookie
  /** More authorization request parameters (MCP: `resource`, RFC 8707). */
  extra?: Record<string, string>
}

export interface StartedFlow {
  authorization_url: string
  state: string
  expires_in: number
  /** The Set-Cookie value binding the flow to this browser (absent when binding is off). */
  cookie?: string
}

export async function startFlow(d: Pick<OAuthClientDeps, 'db' | 'config' | 'box'>, s: FlowStart): Promise<StartedFlow> {
  const state = b64url(randomBytes(32))
  const verifier = b64url(randomBytes(48))
  const challenge = b64url(createHash('sha256').update(verifier).digest())
  const nonce = d.config.OAUTH_BIND_BROWSER_SESSION ? b64url(randomBytes(32)) : null
  const ttl = d.config.OAUTH_STATE_TTL_SECONDS
  // old flows are dropped as new ones start (no sweeper needed: an expired flow is refused anyway)
  await d.db.query(sql.unsafe`delete from connector_oauth_flows where expires_at < now()`)
  await d.db
    .query(sql.unsafe`insert into connector_oauth_flows (state, nonce_hash, user_id, connector_id, code_verifier, redirect_uri, expires_at)
    values (${state}, ${nonce === null ? null : sha256hex(nonce)}, ${s.userId}::uuid, ${s.resourceId}::uuid, ${d.box.encrypt(verifier, FLOW_AAD(state))}, ${s.redirectUri},
      now() + make_interval(secs => ${ttl}))`)
  const url = new URL(s.authorizationUrl)
  url.searchParams.set('response_type', 'code')
  url.searchParams.set('client_id', s.clientId)
  url.searchParams.set('redirect_uri', s.redirectUri)
  if (s.scopes.length > 0) url.searchParams.set('scope', s.scopes.join(' '))
  url.searchParams.set('state', state)
  url.searchParams.set('code_challenge', challenge)
  url.searchParams.set('code_challenge_method', 'S256')
  for (const [k, v] of Object.entries(s.extra ?? {})) url.searchParams.set(k, v)
  return {
    authorization_url: url.toString(),
    state,
    expires_in: ttl,
    ...(nonce === null
      ? {}
      : {
          cookie: `${s.cookie.name}=${nonce}; Path=${s.cookie.path}; Max-Age=${String(ttl)}; HttpOnly; Secure; SameSite=Lax`,
        }),
  }
}

/** The Set-Cookie that removes the nonce once the callback has used it. */
export const clearNonceCookie = (c: NonceCookie): string =>
  `${c.name}=; Path=${c.path}; Max-Age=0; HttpOnly; Secure; SameSite=Lax`

function sameNonce(cookie: string | undefined, hash: string): boolean {
  if (cookie === undefined || cookie === '') return false
  const a = Buffer.from(sha256hex(cookie), 'hex')
  const b = Buffer.from(hash, 'hex')
  return a.length === b.length && timingSafeEqual(a, b)
}

export interface TakenFlow {
  userId: string
  resourceId: string
  verifier: string
  redirectUri: string
  code: string
}

/**
 * The provider's redirect back. Checks, in order: a known unexpired state; the browser's nonce
 * cookie (when binding is on); then consumes the state (single use) and answers what the code
 * exchange needs. The caller checks that the resource is of its kind and exchanges the code.
 */
export async function takeFlow(
  d: Pick<OAuthClientDeps, 'db' | 'box'>,
  q: { state?: string; code?: string; error?: string },
  cookieNonce: string | undefined,
): Promise<TakenFlow> {
  if (q.state === undefined || q.state === '') throw AppError.of('oauth.invalid_state', 'the callback carries no state')
  const flow = await maybeRow(
    d.db,
    FlowRow,
    sql.unsafe`select state, nonce_hash, user_id, connector_id, code_verifier, redirect_uri, expires_at < now() as expired
    from connector_oauth_flows where state = ${q.state}`,
  )
  if (flow === null || flow.expired)
    throw AppError.of('oauth.invalid_state', 'unknown or expired OAuth state: start the connection again')
  if (flow.nonce_hash !== null && !sameNonce(cookieNonce, flow.nonce_hash))
    throw AppError.of('oauth.browser_mismatch', 'this OAuth callback belongs to a flow started in another browser')
  const consumed = await d.db.query(sql.unsafe`delete from connector_oauth_flows where state = ${flow.state}`)
  if (consumed.rowCount === 0) throw AppError.of('oauth.invalid_state', 'the OAuth state was already used')
  if (q.error !== undefined) throw AppError.of('oauth.denied', `the provider answered ${q.error}`)
  if (q.code === undefined || q.code === '') throw AppError.of('oauth.invalid_state', 'the callback carries no code')
  return {
    userId: flow.user_id,
    resourceId: flow.connector_id,
    verifier: d.box.decrypt(flow.code_verifier, FLOW_AAD(flow.state)),
    redirectUri: flow.redirect_uri,
    code: q.code,
  }
}
