import { readFileSync, statSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { extname, join, normalize, sep } from 'node:path'
import { parseAddressRanges } from '../kernel/address-ranges.ts'
import type { Logger } from '../kernel/log.ts'
import { ACCESS_COOKIE, clearCookie, cookie, isHttps, readCookies, REFRESH_COOKIE } from './cookies.ts'
import { TokenKeeper, type TokenPair } from './tokens.ts'
import { openUpstream, upstreamJson, type Upstream } from './upstream.ts'

/*
 * The console server: the built console's static files and a backend-for-frontend in front of the
 * API (docs/console.md). It holds no database connection and no NATS connection: every platform
 * call goes to the gateway over HTTP.
 *   /static/*      the built files (immutable, hashed names)
 *   /session/*     sign-in (info, login, verify, me, logout): the tokens go into HttpOnly cookies
 *   /api/v1/*      proxied to the API's management routes with the session's bearer token
 *   /rt/*          proxied to the API's runtime routes (`/rt/chats/…` → `/chats/…`); not /auth/*
 *   anything else  index.html (the console's router takes the path)
 * Unsafe methods need `X-Console-Request: 1` (a cross-site form or image cannot send it) and, when
 * the browser says where it comes from, the console's own origin.
 */
export interface ConsoleServerOptions {
  host: string
  port: number
  /** The built console (src/console/build.ts). */
  dir: string
  /** The API's gateway, e.g. http://127.0.0.1:8000. */
  apiUrl: string
  /** The API's address as a browser reaches it (component previews load from it, never from the console's origin). */
  apiPublicUrl: string
  /** Refresh token lifetime, for the cookie's Max-Age. */
  refreshDays: number
  /**
   * TRUSTED_PROXIES (addresses and CIDR ranges): from a peer in it (the ingress) the console
   * believes X-Forwarded-Proto (cookies Secure behind a TLS-terminating proxy) and passes the
   * X-Forwarded-For chain on to the API with the peer appended, so the gateway's per-address rate
   * limits see the browser's address; from any other peer it sends the peer's address alone.
   */
  trustedProxies: string
  log: Logger
}

export interface ConsoleServer {
  port: number
  close(): Promise<void>
}

const CSP = (apiOrigin: string) =>
  [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    `frame-src ${apiOrigin === '' ? "'none'" : apiOrigin}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "object-src 'none'",
  ].join('; ')

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.json': 'application/json',
}

/** Request headers passed to the API; everything else (cookies, Authorization, Host) stays here. */
const FORWARD_HEADERS = ['accept', 'content-type', 'content-length', 'last-event-id', 'x-application', 'x-request-id']
/** Response headers passed back; Set-Cookie and CORS headers of the API are not the console's. */
const RETURN_HEADERS = [
  'content-type',
  'content-length',
  'content-disposition',
  'cache-control',
  'etag',
  'last-modified',
  'x-request-id',
  'retry-after',
  'allow',
  'location',
]

/** A dual-stack listener's IPv4 peer (::ffff:a.b.c.d) in its plain spelling. */
const plainPeer = (ip: string): string => (ip.startsWith('::ffff:') && ip.includes('.') ? ip.slice(7) : ip)

export async function startConsoleServer(o: ConsoleServerOptions): Promise<ConsoleServer> {
  const up: Upstream = { base: new URL(o.apiUrl) }
  const keeper = new TokenKeeper(up)
  const apiOrigin = o.apiPublicUrl === '' ? '' : new URL(o.apiPublicUrl).origin
  const csp = CSP(apiOrigin)
  const index = () => readFileSync(join(o.dir, 'index.html'))

  const security = (res: ServerResponse) => {
    res.setHeader('content-security-policy', csp)
    res.setHeader('x-content-type-options', 'nosniff')
    res.setHeader('referrer-policy', 'same-origin')
    res.setHeader('x-frame-options', 'DENY')
    res.setHeader('cross-origin-opener-policy', 'same-origin')
  }
  const json = (res: ServerResponse, status: number, body: unknown, cookies: string[] = []) => {
    if (cookies.length > 0) res.setHeader('set-cookie', cookies)
    res.setHeader('cache-control', 'no-store')
    if (status === 204 || body === undefined) {
      res.writeHead(status).end()
      return
    }
    const data = Buffer.from(JSON.stringify(body))
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(data.length) }).end(data)
  }
  const fail = (res: ServerResponse, status: number, code: string, detail: string, cookies: string[] = []) =>
    json(res, status, { detail, code }, cookies)

  const trusted = parseAddressRanges(o.trustedProxies)
  const peerOf = (req: IncomingMessage) => req.socket.remoteAddress ?? ''
  const fromTrustedProxy = (req: IncomingMessage) => trusted.size > 0 && trusted.has(peerOf(req))
  /**
   * The X-Forwarded-For the API gets, as any proxy must send it: a trusted peer's chain with that
   * peer appended; otherwise only the peer (whatever an untrusted client wrote is dropped, or it
   * could name any address it likes and the gateway, which trusts the console, would believe it).
   */
  const forwardedFor = (req: IncomingMessage): string => {
    const peer = plainPeer(peerOf(req))
    if (!fromTrustedProxy(req)) return peer
    // node joins repeated X-Forwarded-For headers with ', ' already; the type allows a list anyway
    const header = req.headers['x-forwarded-for']
    const chain = (Array.isArray(header) ? header.join(', ') : (header ?? '')).trim()
    return chain === '' ? peer : `${chain}, ${peer}`
  }
  const secureOf = (req: IncomingMessage) => isHttps(req, fromTrustedProxy(req))
  const sessionCookies = (req: IncomingMessage, t: TokenPair): string[] => [
    cookie(ACCESS_COOKIE, t.access, t.expiresIn, secureOf(req)),
    cookie(REFRESH_COOKIE, t.refresh, o.refreshDays * 86_400, secureOf(req)),
  ]
  const signedOutCookies = (req: IncomingMessage) => [
    clearCookie(ACCESS_COOKIE, secureOf(req)),
    clearCookie(REFRESH_COOKIE, secureOf(req)),
  ]

  /** The session's access token, refreshed first when (nearly) expired; the cookies to set when it was. */
  const accessOf = async (req: IncomingMessage): Promise<{ token: string | undefined; setCookies: string[] }> => {
    const c = readCookies(req)
    const access = c[ACCESS_COOKIE]
    const refresh = c[REFRESH_COOKIE]
    if (!TokenKeeper.stale(access)) return { token: access, setCookies: [] }
    if (refresh === undefined || refresh === '') return { token: undefined, setCookies: [] }
    const fresh = await keeper.refresh(refresh, forwardedFor(req))
    if (fresh === undefined) return { token: undefined, setCookies: signedOutCookies(req) }
    return { token: fresh.access, setCookies: sessionCookies(req, fresh) }
  }

  /** CSRF: an unsafe method needs the console's header, and the console's own origin when the browser names one. */
  const crossSite = (req: IncomingMessage): boolean => {
    if (!['POST', 'PUT', 'PATCH', 'DELETE'].includes(req.method ?? 'GET')) return false
    if (req.headers['x-console-request'] !== '1') return true
    const site = req.headers['sec-fetch-site']
    if (site !== undefined && site !== 'same-origin') return true
    const origin = req.headers.origin
    if (origin !== undefined && origin !== 'null') {
      try {
        if (new URL(origin).host !== req.headers.host) return true
      } catch {
        return true
      }
    }
    return false
  }

  const readBody = async (req: IncomingMessage, max = 65_536): Promise<unknown> => {
    const chunks: Buffer[] = []
    let size = 0
    for await (const c of req) {
      size += (c as Buffer).length
      if (size > max) throw Object.assign(new Error('body too large'), { status: 413 })
      chunks.push(c as Buffer)
    }
    const text = Buffer.concat(chunks).toString('utf8')
    return text === '' ? {} : (JSON.parse(text) as unknown)
  }

  async function session(req: IncomingMessage, res: ServerResponse, action: string): Promise<void> {
    const fwd = { 'x-forwarded-for': forwardedFor(req) }
    if (req.method === 'GET' && action === 'info') {
      const r = await upstreamJson(up, 'GET', '/auth/info')
      return json(res, r.status, { ...(r.body as object), api_base: o.apiPublicUrl })
    }
    if (req.method === 'GET' && action === 'me') {
      const { token, setCookies } = await accessOf(req)
      if (token === undefined) return fail(res, 401, 'console.signed_out', 'not signed in', setCookies)
      const me = await upstreamJson(up, 'GET', '/auth/me', { token })
      if (me.status !== 200)
        return json(res, me.status, me.body, me.status === 401 ? signedOutCookies(req) : setCookies)
      // an administrator holds the admin grants (the Admins role); the API checks every call anyway
      const check = await upstreamJson(up, 'POST', '/auth/check-permissions', {
        token,
        body: { permissions: ['platform.roles.read:all'] },
      })
      const isAdmin = check.status === 200 && (check.body as { result?: boolean }).result === true
      return json(res, 200, { user: me.body, isAdmin }, setCookies)
    }
    if (req.method !== 'POST') return fail(res, 405, 'route.method_not_allowed', 'method not allowed')
    const body = (await readBody(req)) as Record<string, unknown>
    if (action === 'login' || action === 'verify') {
      const r = await upstreamJson(up, 'POST', action === 'login' ? '/auth/login' : '/auth/verify-otp', {
        body,
        headers: fwd,
      })
      const b = r.body as { access_token?: string; refresh_token?: string; expires_in?: number; user?: unknown }
      if (r.status === 200 && typeof b.access_token === 'string' && typeof b.refresh_token === 'string') {
        const t = { access: b.access_token, refresh: b.refresh_token, expiresIn: b.expires_in ?? 900 }
        // the tokens end here: the page learns only that it is signed in
        return json(res, 200, { signed_in: true, user: b.user }, sessionCookies(req, t))
      }
      return json(res, r.status, r.body)
    }
    if (action === 'logout') {
      const refresh = readCookies(req)[REFRESH_COOKIE]
      if (refresh !== undefined && refresh !== '')
        await upstreamJson(up, 'POST', '/auth/logout', { body: { refresh_token: refresh }, headers: fwd }).catch(
          () => undefined,
        )
      return json(res, 204, undefined, signedOutCookies(req))
    }
    return fail(res, 404, 'route.not_found', 'no such route')
  }

  async function proxy(req: IncomingMessage, res: ServerResponse, target: string): Promise<void> {
    const { token, setCookies } = await accessOf(req)
    const headers: Record<string, string> = { 'x-forwarded-for': forwardedFor(req) }
    for (const h of FORWARD_HEADERS) {
      const v = req.headers[h]
      if (typeof v === 'string') headers[h] = v
    }
    if (token !== undefined) headers['authorization'] = `Bearer ${token}`
    if (req.headers['transfer-encoding'] !== undefined && headers['content-length'] === undefined)
      headers['transfer-encoding'] = 'chunked'
    const { req: out, response } = openUpstream(up, req.method ?? 'GET', target, headers)
    req.pipe(out)
    // the browser went away (closed an event stream): the upstream exchange goes too
    res.on('close', () => {
      if (!res.writableFinished) out.destroy()
    })
    const answer = await response
    const back: Record<string, string | string[]> = {}
    for (const h of RETURN_HEADERS) {
      const v = answer.headers[h]
      if (v !== undefined) back[h] = v
    }
    if (setCookies.length > 0) back['set-cookie'] = setCookies
    if ((answer.headers['content-type'] ?? '').startsWith('text/event-stream')) {
      back['cache-control'] = 'no-store'
      back['x-accel-buffering'] = 'no'
    }
    // a 401 after the refresh: the session is over (revoked, user deactivated)
    if (answer.statusCode === 401) back['set-cookie'] = signedOutCookies(req)
    res.writeHead(answer.statusCode ?? 502, back)
    res.flushHeaders()
    answer.pipe(res)
  }

  function serveStatic(req: IncomingMessage, res: ServerResponse, path: string): void {
    const root = join(o.dir, 'static')
    const file = normalize(join(root, decodeURIComponent(path)))
    if (!file.startsWith(root + sep)) return fail(res, 404, 'route.not_found', 'no such file')
    let size: number
    try {
      const st = statSync(file)
      if (!st.isFile()) return fail(res, 404, 'route.not_found', 'no such file')
      size = st.size
    } catch {
      return fail(res, 404, 'route.not_found', 'no such file')
    }
    res.writeHead(200, {
      'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
      'content-length': String(size),
      // hashed names: a new build has new names
      'cache-control': 'public, max-age=31536000, immutable',
    })
    if (req.method === 'HEAD') res.end()
    else res.end(readFileSync(file))
  }

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    security(res)
    const url = new URL(req.url ?? '/', 'http://console')
    const path = url.pathname
    if (path.startsWith('/static/')) return serveStatic(req, res, path.slice('/static/'.length))
    const isApi = path.startsWith('/api/')
    const isRuntime = path.startsWith('/rt/')
    const isSession = path.startsWith('/session/')
    if (isApi || isRuntime || isSession) {
      if (crossSite(req))
        return fail(
          res,
          403,
          'console.cross_site',
          'the console refuses this request: it did not come from the console page',
        )
      if (isSession) return session(req, res, path.slice('/session/'.length))
      if (isApi && !path.startsWith('/api/v1/')) return fail(res, 404, 'route.not_found', 'no such route')
      const target = isRuntime ? path.slice('/rt'.length) : path
      // token-minting and token-reading routes stay behind /session (the page never sees a token)
      if (isRuntime && (target === '/auth' || target.startsWith('/auth/')))
        return fail(res, 404, 'route.not_found', 'no such route')
      return proxy(req, res, `${target}${url.search}`)
    }
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return fail(res, 405, 'route.method_not_allowed', 'method not allowed')
    const page = index()
    res.writeHead(200, {
      'content-type': TYPES['.html'] as string,
      'content-length': String(page.length),
      'cache-control': 'no-cache',
    })
    res.end(req.method === 'HEAD' ? undefined : page)
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      const status = (err as { status?: number }).status
      if (status === 413) return fail(res, 413, 'request.too_large', 'the body is too large')
      if (err instanceof SyntaxError) return fail(res, 400, 'request.malformed_json', 'the body is not valid JSON')
      o.log.warn({ err, url: req.url }, 'console request failed')
      if (res.headersSent) res.destroy()
      else fail(res, 502, 'console.upstream_unavailable', 'the platform API did not answer')
    })
  })
  // event streams stay open for minutes; the API's own idle timeout ends them
  server.requestTimeout = 0
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(o.port, o.host, () => resolve())
  })
  const port = (server.address() as AddressInfo).port
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
