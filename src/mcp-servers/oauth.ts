import { Type as T } from '@sinclair/typebox'
import { secretAad, type SecretBox } from '../kernel/crypto.ts'
import { AppError } from '../kernel/errors.ts'
import { mcpServerKind } from '../kinds/mcp-server/kind.ts'
import type { ProviderCall } from '../oauth-client/deps.ts'
import { revokeToken, tokenRequest, type TokenEndpoint } from '../oauth-client/endpoint.ts'
import { clearNonceCookie, startFlow, takeFlow, type StartedFlow } from '../oauth-client/flow.ts'
import {
  accessToken,
  storeTokens,
  takeAllTokens,
  takeTokens,
  tokenStatus,
  type PlainTokens,
} from '../oauth-client/tokens.ts'
import { guardedFetch } from '../platform/outbound-http.ts'
import { sql } from '../platform/db.ts'
import { maybeRow, rowType } from '../platform/typed-rows.ts'
import { ownerSecretValue } from './access.ts'
import { mcpOutbound, requestTimeoutMs, type McpDeps, type McpServerRecord } from './deps.ts'
import { discoverAuthorizationServer, discoveryFailed } from './oauth-discovery.ts'
import { MCP_OAUTH_CALLBACK_PATH, MCP_OAUTH_NONCE_COOKIE } from './routes.ts'

/*
 * OAuth 2.1 for remote MCP servers with `auth.type: oauth`, as the MCP authorization specification
 * describes, over the platform's one OAuth client (src/oauth-client/: the PKCE S256 flow bound to
 * the starting browser by the nonce cookie, the encrypted per-user tokens, refresh under a lock).
 * Starting a connection discovers the authorization server (oauth-discovery.ts), registers the
 * platform as a client (RFC 7591; unless the server names `auth.client_id`), and keeps both per
 * server (`mcp_server_oauth_clients`). Authorization and token requests carry the RFC 8707
 * `resource` indicator. Tokens are per user: each user connects their own account, and a user who
 * has not gets `mcp_server.oauth_not_connected` telling them how. A token the server refuses (401)
 * is refreshed once (client.ts). The kept client is bound to the server's URL, the redirect URI
 * and the configured client id: when one changes, the next start discovers again and every user's
 * tokens for the server are dropped — a server's owner cannot point it elsewhere and receive the
 * users' tokens.
 */
const COOKIE = { name: MCP_OAUTH_NONCE_COOKIE, path: MCP_OAUTH_CALLBACK_PATH }
const REGISTRATION_MAX_BYTES = 64 * 1024
const SECRET_AAD = (serverId: string) => secretAad('mcp_server_oauth_client', serverId, 'client_secret')

const ClientRow = rowType(
  T.Object(
    {
      server_id: T.String(),
      server_url: T.String(),
      redirect_uri: T.String(),
      configured_client_id: T.Union([T.String(), T.Null()]),
      issuer: T.String(),
      authorization_endpoint: T.String(),
      token_endpoint: T.String(),
      revocation_endpoint: T.Union([T.String(), T.Null()]),
      resource: T.String(),
      scope: T.String(),
      client_id: T.String(),
      client_secret: T.Union([T.String(), T.Null()]),
    },
    { title: 'mcp server oauth client' },
  ),
)
type Client = (typeof ClientRow)['schema']['static']

export const notOauth = (s: McpServerRecord): AppError =>
  AppError.of('mcp_server.not_oauth', `MCP server ${s.namespace}/${s.name} does not use OAuth`)

export const notConnected = (s: McpServerRecord, why: 'none' | 'expired' | 'refused'): AppError =>
  AppError.of(
    'mcp_server.oauth_not_connected',
    `${
      why === 'none'
        ? 'connect your account first'
        : why === 'expired'
          ? 'the OAuth token expired and there is no refresh token: connect again'
          : 'the MCP server refused the OAuth token: connect again'
    }: POST /api/v1/mcp-servers/${s.namespace}/${s.name}/oauth/start`,
  )

function boxOf(d: McpDeps): SecretBox {
  if (d.box === undefined) throw new Error('MCP deps without a secret box: OAuth servers need one')
  return d.box
}

/** The platform's callback as authorization servers know it. */
export const mcpRedirectUri = (d: Pick<McpDeps, 'config'>): string =>
  d.config.DOMAIN !== ''
    ? `https://${d.config.DOMAIN}${MCP_OAUTH_CALLBACK_PATH}`
    : `http://localhost:${String(d.config.PORT)}${MCP_OAUTH_CALLBACK_PATH}`

const providerCall = (d: McpDeps, server: McpServerRecord): ProviderCall => {
  const out = mcpOutbound(d)
  return {
    timeoutMs: requestTimeoutMs(d.config, server.timeout_seconds),
    policy: { ...out.policy, maxResponseBytes: d.config.MCP_CLIENT_MAX_RESPONSE_BYTES },
    deps: out.deps,
  }
}

const current = (d: McpDeps, server: McpServerRecord, row: Client | null): row is Client =>
  row !== null &&
  row.server_url === server.url &&
  row.redirect_uri === mcpRedirectUri(d) &&
  row.configured_client_id === (server.auth.client_id ?? null)

const loadClient = (d: McpDeps, serverId: string): Promise<Client | null> =>
  maybeRow(
    d.db,
    ClientRow,
    sql.unsafe`select server_id, server_url, redirect_uri, configured_client_id, issuer, authorization_endpoint, token_endpoint,
      revocation_endpoint, resource, scope, client_id, client_secret from mcp_server_oauth_clients where server_id = ${serverId}::uuid`,
  )

/** RFC 7591: the platform registered as a public client (PKCE) with its callback; a secret when the server issues one. */
async function register(
  d: McpDeps,
  server: McpServerRecord,
  endpoint: string,
  scopes: readonly string[],
): Promise<{ client_id: string; client_secret: string | null }> {
  const out = mcpOutbound(d)
  const res = await guardedFetch(
    endpoint,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({
        client_name: 'agent-platform',
        redirect_uris: [mcpRedirectUri(d)],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
        ...(scopes.length > 0 ? { scope: scopes.join(' ') } : {}),
      }),
      timeoutMs: requestTimeoutMs(d.config, server.timeout_seconds),
      ...out.policy,
      maxResponseBytes: REGISTRATION_MAX_BYTES,
      maxRedirects: 0,
    },
    out.deps,
  )
  let body: Record<string, unknown> = {}
  try {
    body = JSON.parse(res.body.toString('utf8')) as Record<string, unknown>
  } catch {
    body = {}
  }
  if ((res.status !== 200 && res.status !== 201) || typeof body['client_id'] !== 'string' || body['client_id'] === '')
    throw discoveryFailed(
      `the authorization server refused the client registration (${typeof body['error'] === 'string' ? body['error'] : `HTTP ${String(res.status)}`})`,
    )
  return {
    client_id: body['client_id'],
    client_secret:
      typeof body['client_secret'] === 'string' && body['client_secret'] !== '' ? body['client_secret'] : null,
  }
}

/** The kept client, or a new one: discovered, registered when needed; a stale one replaced (its tokens dropped). */
async function clientForStart(d: McpDeps, server: McpServerRecord): Promise<Client> {
  const kept = await loadClient(d, server.id)
  if (current(d, server, kept)) return kept
  const as = await discoverAuthorizationServer(d, server)
  const configured = server.auth.client_id ?? null
  let clientId = configured
  let secret: string | null = null
  if (clientId === null) {
    if (as.registration_endpoint === undefined)
      throw discoveryFailed(
        `the authorization server ${as.issuer} offers no dynamic client registration: set auth.client_id (and auth.secret) on the MCP server`,
      )
    const reg = await register(d, server, as.registration_endpoint, as.scopes)
    clientId = reg.client_id
    secret = reg.client_secret
  }
  if (kept !== null) {
    // they were issued for another URL, client or authorization server
    await takeAllTokens({ db: d.db, box: boxOf(d) }, server.id)
    await d.db.query(sql.unsafe`delete from mcp_server_oauth_clients where server_id = ${server.id}::uuid`)
    d.log.info({ server: `${server.namespace}/${server.name}` }, 'MCP server OAuth client replaced: tokens dropped')
  }
  // two first starts at once: the first row stays, the second registration is not used
  await d.db
    .query(sql.unsafe`insert into mcp_server_oauth_clients (server_id, server_url, redirect_uri, configured_client_id, issuer,
      authorization_endpoint, token_endpoint, revocation_endpoint, resource, scope, client_id, client_secret)
    values (${server.id}::uuid, ${server.url}, ${mcpRedirectUri(d)}, ${configured}, ${as.issuer}, ${as.authorization_endpoint},
      ${as.token_endpoint}, ${as.revocation_endpoint ?? null}, ${as.resource}, ${as.scopes.join(' ')}, ${clientId},
      ${secret === null ? null : boxOf(d).encrypt(secret, SECRET_AAD(server.id))})
    on conflict (server_id) do nothing`)
  const row = await loadClient(d, server.id)
  if (row === null) throw discoveryFailed('the OAuth client of the MCP server could not be kept')
  return row
}

async function clientSecretOf(d: McpDeps, server: McpServerRecord, c: Client): Promise<string | null> {
  if (c.client_secret !== null) return boxOf(d).decrypt(c.client_secret, SECRET_AAD(server.id))
  if (c.configured_client_id !== null && server.auth.secret !== undefined)
    return ownerSecretValue(d, server, server.auth.secret)
  return null
}

const tokenEndpoint = (d: McpDeps, server: McpServerRecord, c: Client, secret: string | null): TokenEndpoint => ({
  ...providerCall(d, server),
  url: c.token_endpoint,
  clientId: c.client_id,
  clientSecret: secret,
  extra: { resource: c.resource },
})

/** The user's connection starts: the authorization server's URL to open, the nonce cookie. */
export async function startMcpFlow(d: McpDeps, userId: string, server: McpServerRecord): Promise<StartedFlow> {
  if (server.auth.type !== 'oauth') throw notOauth(server)
  const c = await clientForStart(d, server)
  return startFlow(
    { db: d.db, config: d.config, box: boxOf(d) },
    {
      userId,
      resourceId: server.id,
      authorizationUrl: c.authorization_endpoint,
      clientId: c.client_id,
      scopes: c.scope.split(' ').filter((s) => s !== ''),
      redirectUri: c.redirect_uri,
      cookie: COOKIE,
      extra: { resource: c.resource },
    },
  )
}

export const clearMcpNonceCookie = (): string => clearNonceCookie(COOKIE)

/** The authorization server's redirect back: the flow checked and consumed, the code exchanged, the tokens kept. */
export async function finishMcpFlow(
  d: McpDeps,
  q: { state?: string; code?: string; error?: string },
  cookieNonce: string | undefined,
): Promise<{ server: McpServerRecord; scope: string | null; expires_at: string | null }> {
  const box = boxOf(d)
  const flow = await takeFlow({ db: d.db, box }, q, cookieNonce)
  const server = (await d.resources.byId(mcpServerKind, flow.resourceId)) as McpServerRecord | null
  if (server === null || server.auth.type !== 'oauth')
    throw AppError.of('oauth.invalid_state', 'the MCP server of this flow no longer exists or no longer uses OAuth')
  const c = await loadClient(d, server.id)
  if (!current(d, server, c) || c.redirect_uri !== flow.redirectUri)
    throw AppError.of('oauth.invalid_state', 'the MCP server changed since the connection started: start it again')
  const tokens = await tokenRequest(tokenEndpoint(d, server, c, await clientSecretOf(d, server, c)), {
    grant_type: 'authorization_code',
    code: flow.code,
    redirect_uri: flow.redirectUri,
    code_verifier: flow.verifier,
  })
  const stored = await storeTokens({ db: d.db, box }, { userId: flow.userId, resourceId: server.id }, tokens)
  d.log.info({ server: `${server.namespace}/${server.name}`, user: flow.userId }, 'MCP server OAuth connected')
  return { server, ...stored }
}

/** The user's access token for the server (refreshed when about to expire, or when `rejected` is the one it refused). */
export async function mcpAccessToken(
  d: McpDeps,
  server: McpServerRecord,
  userId: string,
  rejected?: string,
): Promise<string> {
  const c = await loadClient(d, server.id)
  if (!current(d, server, c)) throw notConnected(server, 'none')
  return accessToken(
    { db: d.db, box: boxOf(d), log: d.log },
    { userId, resourceId: server.id },
    {
      async refresher() {
        const ep = tokenEndpoint(d, server, c, await clientSecretOf(d, server, c))
        return (refresh) => tokenRequest(ep, { grant_type: 'refresh_token', refresh_token: refresh })
      },
      notConnected: (why) => notConnected(server, rejected !== undefined && why === 'expired' ? 'refused' : why),
      ...(rejected === undefined ? {} : { rejected }),
      log: { server: `${server.namespace}/${server.name}` },
    },
  )
}

export async function mcpTokenStatus(d: McpDeps, userId: string, server: McpServerRecord) {
  if (server.auth.type !== 'oauth') throw notOauth(server)
  const c = await loadClient(d, server.id)
  const s = await tokenStatus(d, { userId, resourceId: server.id })
  // tokens of a replaced client are not used (and dropped at the next start)
  return current(d, server, c) ? s : { ...s, connected: false }
}

/** RFC 7009 revocation of one user's pair (refresh token first), best effort: whether both were accepted. */
async function revokePair(
  d: McpDeps,
  server: McpServerRecord,
  c: Client,
  secret: string | null,
  row: PlainTokens,
): Promise<boolean> {
  if (c.revocation_endpoint === null) return false
  const ep = { ...providerCall(d, server), url: c.revocation_endpoint, clientId: c.client_id, clientSecret: secret }
  let revoked = true
  const pairs: [string, 'refresh_token' | 'access_token'][] = []
  if (row.refreshToken !== null) pairs.push([row.refreshToken, 'refresh_token'])
  pairs.push([row.accessToken, 'access_token'])
  for (const [token, hint] of pairs) {
    try {
      if (!(await revokeToken(ep, token, hint))) revoked = false
    } catch (err) {
      revoked = false
      d.log.warn({ err, server: `${server.namespace}/${server.name}` }, 'MCP OAuth token revocation failed')
    }
  }
  return revoked
}

/** The user's disconnect: the tokens deleted here, then revoked at the authorization server when it offers revocation (best effort). */
export async function mcpDisconnect(
  d: McpDeps,
  userId: string,
  server: McpServerRecord,
): Promise<{ revoked: boolean }> {
  if (server.auth.type !== 'oauth') throw notOauth(server)
  const row = await takeTokens({ db: d.db, box: boxOf(d) }, { userId, resourceId: server.id })
  if (row === null) throw AppError.of('mcp_server.oauth_not_found', 'no OAuth connection to remove')
  const c = await loadClient(d, server.id)
  if (!current(d, server, c)) return { revoked: false }
  const secret = await clientSecretOf(d, server, c).catch(() => null)
  return { revoked: await revokePair(d, server, c, secret, row) }
}

/**
 * The server is being deleted (the resource engine's beforeRemove hook): every user's tokens are
 * taken out in one statement and revoked (best effort, a few at a time) before the row's delete
 * would cascade them away unrevoked.
 */
export async function revokeMcpServerTokens(d: McpDeps, server: McpServerRecord): Promise<number> {
  const c = await loadClient(d, server.id)
  const all = await takeAllTokens({ db: d.db, box: boxOf(d) }, server.id)
  if (c === null || all.length === 0 || c.revocation_endpoint === null) return 0
  const secret = await clientSecretOf(d, server, c).catch(() => null)
  let revoked = 0
  for (let i = 0; i < all.length; i += 4) {
    const done = await Promise.all(all.slice(i, i + 4).map((row) => revokePair(d, server, c, secret, row)))
    revoked += done.filter(Boolean).length
  }
  d.log.info(
    { server: `${server.namespace}/${server.name}`, users: all.length, revoked },
    'MCP server deleted: OAuth tokens revoked',
  )
  return revoked
}
