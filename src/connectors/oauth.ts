import { connectorKind } from '../kinds/connector/kind.ts'
import { AppError } from '../kernel/errors.ts'
import type { ProviderCall } from '../oauth-client/deps.ts'
import { revokeToken, tokenRequest, type TokenEndpoint } from '../oauth-client/endpoint.ts'
import {
  clearNonceCookie as clearCookie,
  startFlow as start,
  takeFlow,
  type StartedFlow,
} from '../oauth-client/flow.ts'
import {
  accessToken as ownerAccessToken,
  storeTokens,
  takeAllTokens,
  takeTokens,
  tokenStatus as ownerTokenStatus,
  type PlainTokens,
} from '../oauth-client/tokens.ts'
import { attemptTimeoutMs, outboundDeps, outboundPolicy, type ConnectorDeps, type ConnectorRecord } from './deps.ts'
import { CALLBACK_PATH, NONCE_COOKIE } from './routes.ts'
import { secretValue } from './secrets.ts'

/*
 * OAuth 2 for connectors with `auth.type: oauth2`: the connector's settings (authorization and
 * token URLs, client id, scopes, the client secret from `auth.secret`) over the platform's one
 * OAuth client (src/oauth-client/: the PKCE flow bound to the browser by the nonce cookie, the
 * encrypted per-user tokens, refresh under lock). Tokens are revoked at the provider (RFC 7009)
 * when the user disconnects or the connector is deleted. Every request to the provider goes
 * through the guarded outbound client like the connector's own calls.
 */
const COOKIE = { name: NONCE_COOKIE, path: CALLBACK_PATH }

function settings(connector: ConnectorRecord) {
  const o = connector.auth.oauth2
  if (connector.auth.type !== 'oauth2' || o === undefined)
    throw new AppError(
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

export type { StartedFlow }

export async function startFlow(d: ConnectorDeps, userId: string, connector: ConnectorRecord): Promise<StartedFlow> {
  const o = settings(connector)
  return start(d, {
    userId,
    resourceId: connector.id,
    authorizationUrl: o.authorization_url,
    clientId: o.client_id,
    scopes: o.scopes ?? [],
    redirectUri: redirectUriOf(d, connector),
    cookie: COOKIE,
  })
}

/** The Set-Cookie that removes the nonce once the callback has used it. */
export const clearNonceCookie = (): string => clearCookie(COOKIE)

const clientSecretOf = async (d: ConnectorDeps, connector: ConnectorRecord): Promise<string | null> =>
  connector.auth.secret === undefined ? null : secretValue(d, connector, connector.auth.secret)

const providerCall = (d: ConnectorDeps, connector: ConnectorRecord): ProviderCall => ({
  timeoutMs: attemptTimeoutMs(d.config, connector.timeout_seconds),
  policy: outboundPolicy(d.config),
  deps: outboundDeps(d),
})

const tokenEndpoint = (d: ConnectorDeps, connector: ConnectorRecord, clientSecret: string | null): TokenEndpoint => {
  const o = settings(connector)
  return { ...providerCall(d, connector), url: o.token_url, clientId: o.client_id, clientSecret }
}

/** The provider's redirect back: the flow checked and consumed (src/oauth-client/flow.ts), the code exchanged. */
export async function finishFlow(
  d: ConnectorDeps,
  q: { state?: string; code?: string; error?: string },
  cookieNonce: string | undefined,
): Promise<{ connector: ConnectorRecord; scope: string | null; expires_at: string | null }> {
  const flow = await takeFlow(d, q, cookieNonce)
  const connector = (await d.resources.byId(connectorKind, flow.resourceId)) as ConnectorRecord | null
  if (connector === null) throw AppError.of('oauth.invalid_state', 'the connector of this flow no longer exists')
  const tokens = await tokenRequest(tokenEndpoint(d, connector, await clientSecretOf(d, connector)), {
    grant_type: 'authorization_code',
    code: flow.code,
    redirect_uri: flow.redirectUri,
    code_verifier: flow.verifier,
  })
  const stored = await storeTokens(d, { userId: flow.userId, resourceId: connector.id }, tokens)
  d.log.info({ connector: `${connector.namespace}/${connector.name}`, user: flow.userId }, 'connector OAuth connected')
  return { connector, ...stored }
}

/** The user's access token for the connector, refreshed first when it expires within 30 s. */
export async function accessToken(d: ConnectorDeps, userId: string, connector: ConnectorRecord): Promise<string> {
  settings(connector)
  return ownerAccessToken(
    d,
    { userId, resourceId: connector.id },
    {
      async refresher() {
        const ep = tokenEndpoint(d, connector, await clientSecretOf(d, connector))
        return (refresh) => tokenRequest(ep, { grant_type: 'refresh_token', refresh_token: refresh })
      },
      notConnected: (why) =>
        new AppError(
          409,
          'connector.oauth_not_connected',
          why === 'none'
            ? `connect your account first: POST /api/v1/connectors/${connector.namespace}/${connector.name}/oauth/start`
            : 'the OAuth token expired and there is no refresh token: connect again',
        ),
      log: { connector: `${connector.namespace}/${connector.name}` },
    },
  )
}

export const tokenStatus = (d: ConnectorDeps, userId: string, connector: ConnectorRecord) =>
  ownerTokenStatus(d, { userId, resourceId: connector.id })

/**
 * RFC 7009 revocation of one stored token pair: the refresh token first (which also ends its
 * access tokens at most providers), then the access token. Best effort: a provider that is down or
 * refuses must not keep anyone from removing the connection; answers whether both were accepted
 * (false as well when the connector names no revocation URL).
 */
async function revokeAtProvider(
  d: ConnectorDeps,
  connector: ConnectorRecord,
  row: PlainTokens,
  clientSecret: string | null,
): Promise<boolean> {
  const o = connector.auth.oauth2
  if (o?.revocation_url === undefined) return false
  const ep = { ...providerCall(d, connector), url: o.revocation_url, clientId: o.client_id, clientSecret }
  const tokens: [string, 'refresh_token' | 'access_token'][] = []
  if (row.refreshToken !== null) tokens.push([row.refreshToken, 'refresh_token'])
  tokens.push([row.accessToken, 'access_token'])
  let revoked = true
  for (const [token, hint] of tokens) {
    try {
      if (!(await revokeToken(ep, token, hint))) revoked = false
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
  const row = await takeTokens(d, { userId, resourceId: connector.id })
  if (row === null) throw new AppError(404, 'connector.oauth_not_found', 'no OAuth connection to remove')
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
  const all = await takeAllTokens(d, connector.id)
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
