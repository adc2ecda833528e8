import { randomBytes } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import https from 'node:https'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { mcpAuthRouter } from '@modelcontextprotocol/sdk/server/auth/router.js'
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js'
import type { AuthorizationParams, OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js'
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js'
import type { OAuthClientInformationFull, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { listenLocal, type LocalTls } from '../helpers/local-https.ts'

/*
 * An MCP server protected by OAuth 2.1 as the MCP authorization specification describes, built
 * with the official SDK over HTTPS at a documentation address: its server-side auth router
 * (`mcpAuthRouter`: RFC 8414 metadata, RFC 9728 protected-resource metadata for /mcp, RFC 7591
 * registration, authorization with PKCE S256 checked by the SDK, token, RFC 7009 revocation) over
 * a provider written here, and /mcp behind the SDK's `requireBearerAuth` (401 with
 * `WWW-Authenticate: Bearer … resource_metadata="…"`, the token's resource checked) serving
 * McpServer in stateless Streamable HTTP. The "user" always consents: /authorize answers 302 to
 * the redirect URI with a code; each code grant is a new subject. Tool: `whoami` → the token's
 * subject and scopes. /mcp-quiet is a second resource on the same authorization server whose 401
 * carries no challenge: its protected-resource metadata is only at the well-known URI.
 */
/* express (the SDK's own dependency, untyped here): only what this file uses */
type Req = IncomingMessage & { path: string; body?: unknown }
type Handler = (req: Req, res: ServerResponse, next: () => void) => void
interface App {
  (req: IncomingMessage, res: ServerResponse): void
  use(...handlers: unknown[]): void
  all(path: string, ...handlers: unknown[]): void
}
const express = ((await import('express' as string)) as { default: { (): App; json(): unknown } }).default

export interface OAuthMcp {
  base: string
  /** The MCP endpoint (also the RFC 8707 resource the tokens must be for). */
  url: string
  /** The second MCP endpoint, answering 401 without a challenge. */
  quietUrl: string
  /** Lifetime (s) of the access tokens issued. */
  accessSeconds: number
  /** Every request's method and path. */
  requests: string[]
  grants: string[]
  registrations: number
  /** The `resource` of every authorization and token request. */
  resources: string[]
  revoked: Set<string>
  /** Every access token issued so far stops working (the server answers 401). */
  expireAccessTokens(): void
  close(): Promise<void>
}

export async function startOAuthMcp(tls: LocalTls): Promise<OAuthMcp> {
  const clients = new Map<string, OAuthClientInformationFull>()
  const codes = new Map<string, { client: string; params: AuthorizationParams; subject: string }>()
  const access = new Map<string, AuthInfo & { subject: string }>()
  const refresh = new Map<string, { client: string; subject: string; scopes: string[]; resource: URL }>()
  let subjects = 0
  const s: OAuthMcp = {
    base: '',
    url: '',
    quietUrl: '',
    accessSeconds: 3600,
    requests: [],
    grants: [],
    registrations: 0,
    resources: [],
    revoked: new Set(),
    expireAccessTokens: () => {
      for (const a of access.values()) a.expiresAt = 0
    },
    close: async () => undefined,
  }
  const checkResource = (r: URL | undefined): URL => {
    s.resources.push(r?.href ?? '')
    if (r === undefined || (r.href !== s.url && r.href !== s.quietUrl))
      throw new Error(`tokens are for ${s.url} or ${s.quietUrl}, not ${String(r?.href)}`)
    return r
  }
  const issue = (client: string, subject: string, scopes: string[], resource: URL): OAuthTokens => {
    const at = `at-${randomBytes(8).toString('hex')}`
    const rt = `rt-${randomBytes(8).toString('hex')}`
    access.set(at, {
      token: at,
      clientId: client,
      scopes,
      expiresAt: Math.floor(Date.now() / 1000) + s.accessSeconds,
      resource,
      subject,
    })
    refresh.set(rt, { client, subject, scopes, resource })
    return {
      access_token: at,
      refresh_token: rt,
      token_type: 'Bearer',
      expires_in: s.accessSeconds,
      scope: scopes.join(' '),
    }
  }
  const provider: OAuthServerProvider = {
    clientsStore: {
      getClient: (id) => clients.get(id),
      registerClient: (c) => {
        s.registrations++
        const full = { ...c, client_id: `client-${String(s.registrations)}` } as OAuthClientInformationFull
        clients.set(full.client_id, full)
        return full
      },
    },
    async authorize(client, params, res) {
      checkResource(params.resource)
      const code = `code-${randomBytes(8).toString('hex')}`
      subjects++
      codes.set(code, { client: client.client_id, params, subject: `subject-${String(subjects)}` })
      const to = new URL(params.redirectUri)
      to.searchParams.set('code', code)
      if (params.state !== undefined) to.searchParams.set('state', params.state)
      res.redirect(302, to.toString())
    },
    async challengeForAuthorizationCode(_client, code) {
      const c = codes.get(code)
      if (c === undefined) throw new Error('unknown code')
      return c.params.codeChallenge
    },
    async exchangeAuthorizationCode(client, code, _verifier, redirectUri, resource) {
      const c = codes.get(code)
      if (c === undefined || c.client !== client.client_id) throw new Error('unknown code')
      if (redirectUri !== c.params.redirectUri) throw new Error('redirect_uri differs')
      const r = checkResource(resource)
      codes.delete(code)
      s.grants.push('authorization_code')
      return issue(client.client_id, c.subject, c.params.scopes ?? [], r)
    },
    async exchangeRefreshToken(client, token, _scopes, resource) {
      const r = refresh.get(token)
      if (r === undefined || r.client !== client.client_id) throw new Error('unknown refresh token')
      if (checkResource(resource).href !== r.resource.href) throw new Error('another resource')
      refresh.delete(token) // rotated
      s.grants.push('refresh_token')
      return issue(client.client_id, r.subject, r.scopes, r.resource)
    },
    async verifyAccessToken(token) {
      const a = access.get(token)
      if (a === undefined) throw new Error('unknown token')
      return a
    },
    async revokeToken(_client, req) {
      s.revoked.add(req.token)
      access.delete(req.token)
      refresh.delete(req.token)
    },
  }

  const app = express()
  app.use(((req, _res, next) => {
    s.requests.push(`${String(req.method)} ${req.path}`)
    next()
  }) satisfies Handler)
  const server = https.createServer({ cert: tls.cert, key: tls.key }, app)
  const listening = await listenLocal(server, tls)
  s.base = `https://${tls.address}:${String(listening.port)}`
  s.url = `${s.base}/mcp`
  s.quietUrl = `${s.base}/mcp-quiet`
  const off = { rateLimit: false } as const
  app.use(
    mcpAuthRouter({
      provider,
      issuerUrl: new URL(s.base),
      resourceServerUrl: new URL(s.url),
      scopesSupported: ['mcp:tools'],
      authorizationOptions: off,
      tokenOptions: off,
      clientRegistrationOptions: off,
      revocationOptions: off,
    }),
  )
  const bearer = requireBearerAuth({
    verifier: provider,
    requiredScopes: ['mcp:tools'],
    resourceMetadataUrl: `${s.base}/.well-known/oauth-protected-resource/mcp`,
    expectedResource: new URL(s.url),
  })
  const serve: Handler = (req, res) => {
    void (async () => {
      const mcp = new McpServer({ name: 'oauth-crm', version: '1.0.0' })
      mcp.registerTool('whoami', { description: "The token's subject" }, (extra) => {
        const info = access.get(extra.authInfo?.token ?? '')
        return {
          content: [{ type: 'text', text: `${info?.subject ?? '?'} ${(extra.authInfo?.scopes ?? []).join(' ')}` }],
        }
      })
      const t = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
      res.once('close', () => void t.close())
      await mcp.connect(t)
      await t.handleRequest(req, res, req.body)
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500)
      res.end(String(err))
    })
  }
  app.all('/mcp', express.json(), bearer, serve)
  // the second resource: its metadata only at the well-known URI, a 401 without a challenge
  app.all('/.well-known/oauth-protected-resource/mcp-quiet', ((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(
      JSON.stringify({ resource: s.quietUrl, authorization_servers: [`${s.base}/`], scopes_supported: ['mcp:tools'] }),
    )
  }) satisfies Handler)
  const quietBearer: Handler = (req, res, next) => {
    const token = (req.headers.authorization ?? '').replace(/^Bearer /, '')
    const a = access.get(token)
    if (a === undefined || (a.expiresAt ?? 0) < Date.now() / 1000 || a.resource?.href !== s.quietUrl) {
      res.writeHead(401).end()
      return
    }
    ;(req as Req & { auth?: AuthInfo }).auth = a
    next()
  }
  app.all('/mcp-quiet', express.json(), quietBearer, serve)
  s.close = listening.close
  return s
}
