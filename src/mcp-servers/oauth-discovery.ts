import { AppError } from '../kernel/errors.ts'
import { guardedFetch } from '../platform/outbound-http.ts'
import { mcpOutbound, requestTimeoutMs, type McpDeps, type McpServerRecord } from './deps.ts'

/*
 * Finding a remote MCP server's authorization server, as the MCP authorization specification
 * (2025-06-18 / 2025-11-25) describes: the server's 401 challenge names its protected-resource
 * metadata (`WWW-Authenticate: Bearer resource_metadata="…"`, RFC 9728 §5.1); without one, the
 * well-known URIs (`/.well-known/oauth-protected-resource` with the server's path, then at the
 * root). The metadata's first `authorization_servers` entry is the issuer, whose metadata is read
 * from RFC 8414 `/.well-known/oauth-authorization-server` or OpenID Connect discovery, in the
 * specification's order. An authorization server that does not announce PKCE S256 is refused (the
 * specification says a client MUST). Scopes: the server's own (auth.scopes), else the challenge's
 * `scope`, else the metadata's `scopes_supported`. Every fetch goes through the guarded client with
 * the MCP servers' policy, no redirects, small answers only.
 */
const METADATA_MAX_BYTES = 256 * 1024

export interface AuthorizationServer {
  issuer: string
  authorization_endpoint: string
  token_endpoint: string
  registration_endpoint: string | undefined
  revocation_endpoint: string | undefined
  /** The RFC 8707 resource indicator: the protected-resource metadata's `resource`, else the server URL. */
  resource: string
  scopes: string[]
}

export const discoveryFailed = (detail: string): AppError => AppError.of('mcp_server.oauth_discovery_failed', detail)

/** The auth-params of a `Bearer` challenge (RFC 6750 §3), names lower-cased. */
export function bearerChallenge(header: string): Record<string, string> {
  const at = header.search(/(^|[\s,])bearer(\s|$)/i)
  if (at === -1) return {}
  const params: Record<string, string> = {}
  const re = /([A-Za-z0-9_-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,]+)/g
  for (const m of header.slice(at).matchAll(re)) {
    const key = (m[1] ?? '').toLowerCase()
    const raw = m[2] ?? ''
    if (!(key in params)) params[key] = raw.startsWith('"') ? raw.slice(1, -1).replace(/\\(.)/g, '$1') : raw
  }
  return params
}

async function getJson(d: McpDeps, server: McpServerRecord, url: string): Promise<Record<string, unknown> | null> {
  const out = mcpOutbound(d)
  const res = await guardedFetch(
    url,
    {
      method: 'GET',
      headers: { accept: 'application/json', 'mcp-protocol-version': '2025-06-18' },
      timeoutMs: requestTimeoutMs(d.config, server.timeout_seconds),
      ...out.policy,
      maxResponseBytes: METADATA_MAX_BYTES,
      maxRedirects: 0,
    },
    out.deps,
  )
  if (res.status !== 200) return null
  try {
    const v = JSON.parse(res.body.toString('utf8')) as unknown
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null
  } catch {
    return null
  }
}

/** Asks the server without credentials: its 401 challenge, if it sends one. */
async function probe(d: McpDeps, server: McpServerRecord): Promise<Record<string, string>> {
  const out = mcpOutbound(d)
  const sse = server.transport === 'sse'
  const res = await guardedFetch(
    server.url,
    {
      method: sse ? 'GET' : 'POST',
      headers: sse
        ? { accept: 'text/event-stream' }
        : { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      ...(sse
        ? {}
        : {
            body: JSON.stringify({
              jsonrpc: '2.0',
              id: 0,
              method: 'initialize',
              params: {
                protocolVersion: '2025-06-18',
                capabilities: {},
                clientInfo: { name: 'agent-platform', version: '1.0.0' },
              },
            }),
          }),
      timeoutMs: requestTimeoutMs(d.config, server.timeout_seconds),
      ...out.policy,
      readBody: false,
      maxRedirects: 0,
    },
    out.deps,
  )
  const h = res.headers['www-authenticate']
  if (res.status !== 401 || h === undefined) return {}
  return bearerChallenge(Array.isArray(h) ? h.join(', ') : h)
}

const strings = (v: unknown): string[] =>
  Array.isArray(v) ? (v as unknown[]).filter((x): x is string => typeof x === 'string' && x !== '') : []

const httpUrl = (v: unknown): string | undefined => {
  if (typeof v !== 'string') return undefined
  try {
    const u = new URL(v)
    return u.protocol === 'https:' || u.protocol === 'http:' ? u.toString() : undefined
  } catch {
    return undefined
  }
}

/** Well-known URIs with the path inserted after the host (RFC 8414 §3.1, RFC 9728 §3.1). */
const wellKnown = (base: URL, suffix: string): string[] => {
  const path = base.pathname.replace(/\/+$/, '')
  return path === '' ? [`${base.origin}/.well-known/${suffix}`] : [`${base.origin}/.well-known/${suffix}${path}`]
}

export async function discoverAuthorizationServer(
  d: McpDeps,
  server: McpServerRecord,
  challenge?: Record<string, string>,
): Promise<AuthorizationServer> {
  const serverUrl = new URL(server.url)
  serverUrl.hash = ''
  const asked = challenge ?? (await probe(d, server))
  const candidates =
    asked['resource_metadata'] !== undefined
      ? [asked['resource_metadata']]
      : [
          ...wellKnown(serverUrl, 'oauth-protected-resource'),
          `${serverUrl.origin}/.well-known/oauth-protected-resource`,
        ]
  let prm: Record<string, unknown> | null = null
  for (const url of [...new Set(candidates)]) {
    if (httpUrl(url) === undefined) continue
    prm = await getJson(d, server, url)
    if (prm !== null) break
  }
  if (prm === null) throw discoveryFailed(`no protected-resource metadata found for ${serverUrl.toString()} (RFC 9728)`)
  // RFC 9728 §3.3: the metadata must be about this server (the same URL, or a prefix of it)
  const resource = httpUrl(prm['resource'])
  if (resource !== undefined) {
    const r = new URL(resource)
    const under = r.pathname.endsWith('/') ? r.pathname : `${r.pathname}/`
    if (
      r.origin !== serverUrl.origin ||
      (serverUrl.pathname !== r.pathname && !`${serverUrl.pathname}/`.startsWith(under))
    )
      throw discoveryFailed(`the protected-resource metadata is for ${resource}, not ${serverUrl.toString()}`)
  }
  const issuer = httpUrl(strings(prm['authorization_servers'])[0])
  if (issuer === undefined) throw discoveryFailed('the protected-resource metadata names no authorization server')
  const iss = new URL(issuer)
  const path = iss.pathname.replace(/\/+$/, '')
  const urls =
    path === ''
      ? [`${iss.origin}/.well-known/oauth-authorization-server`, `${iss.origin}/.well-known/openid-configuration`]
      : [
          `${iss.origin}/.well-known/oauth-authorization-server${path}`,
          `${iss.origin}/.well-known/openid-configuration${path}`,
          `${iss.origin}${path}/.well-known/openid-configuration`,
        ]
  let meta: Record<string, unknown> | null = null
  for (const url of urls) {
    meta = await getJson(d, server, url)
    if (meta !== null) break
  }
  if (meta === null) throw discoveryFailed(`no authorization server metadata found for ${issuer} (RFC 8414)`)
  // RFC 8414 §3.3: metadata announcing another issuer is not this authorization server's
  const named = httpUrl(meta['issuer'])
  const bare = (u: string) => u.replace(/\/+$/, '')
  if (named === undefined || bare(named) !== bare(issuer))
    throw discoveryFailed(`the metadata found for ${issuer} is for ${String(meta['issuer'])}`)
  const authorization = httpUrl(meta['authorization_endpoint'])
  const token = httpUrl(meta['token_endpoint'])
  if (authorization === undefined || token === undefined)
    throw discoveryFailed(`the authorization server ${issuer} names no authorization or token endpoint`)
  if (!strings(meta['code_challenge_methods_supported']).includes('S256'))
    throw discoveryFailed(`the authorization server ${issuer} does not announce PKCE S256`)
  const own = server.auth.scopes ?? []
  const fromChallenge = (asked['scope'] ?? '').split(/\s+/).filter((s) => s !== '')
  return {
    issuer,
    authorization_endpoint: authorization,
    token_endpoint: token,
    registration_endpoint: httpUrl(meta['registration_endpoint']),
    revocation_endpoint: httpUrl(meta['revocation_endpoint']),
    resource: resource ?? serverUrl.toString(),
    scopes: own.length > 0 ? own : fromChallenge.length > 0 ? fromChallenge : strings(prm['scopes_supported']),
  }
}
