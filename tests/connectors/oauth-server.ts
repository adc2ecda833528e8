import { createHash, randomBytes } from 'node:crypto'
import type { ServerResponse } from 'node:http'
import type { LocalTls, Received, Receiver } from '../helpers/local-https.ts'
import { startReceiver } from '../helpers/local-https.ts'

/*
 * A real OAuth 2 authorization server for the tests (RFC 6749 authorization-code grant with PKCE
 * S256 — RFC 7636, refresh with rotation, RFC 7009 revocation) plus a protected API, over HTTPS
 * on a documentation address. The "user" always consents: GET /authorize answers 302 to the
 * redirect URI with a code. Everything it checks fails the request the way a provider would.
 *
 *   GET  /authorize   response_type=code, client_id, redirect_uri, state, code_challenge(_method=S256)
 *   POST /token       authorization_code (code, redirect_uri, code_verifier) | refresh_token
 *   POST /revoke      token, token_type_hint
 *   GET  /api/me      Bearer access token → {subject}
 */
interface Teardown {
  teardown(fn: () => unknown): void
}

export interface OAuthServer {
  url: string
  receiver: Receiver
  /** Lifetime (s) of the tokens the code grant issues; refresh grants issue 3600 s. */
  codeTokenSeconds: number
  revoked: Set<string>
  grants: string[]
}

export async function startOAuthServer(
  t: Teardown,
  tls: LocalTls,
  client: { id: string; secret: string },
): Promise<OAuthServer> {
  const codes = new Map<string, { challenge: string; redirectUri: string; scope: string }>()
  const access = new Map<string, number>() // token → expiry (ms)
  const refresh = new Set<string>()
  const server: OAuthServer = {
    url: '',
    receiver: undefined as unknown as Receiver,
    codeTokenSeconds: 3600,
    revoked: new Set(),
    grants: [],
  }
  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' })
    res.end(JSON.stringify(body))
  }
  const issue = (seconds: number, scope: string) => {
    const at = `at-${randomBytes(8).toString('hex')}`
    const rt = `rt-${randomBytes(8).toString('hex')}`
    access.set(at, Date.now() + seconds * 1000)
    refresh.add(rt)
    return { access_token: at, refresh_token: rt, token_type: 'Bearer', expires_in: seconds, scope }
  }
  const handler = (req: Received, res: ServerResponse) => {
    const url = new URL(req.url, 'https://oauth.test')
    if (url.pathname === '/authorize' && req.method === 'GET') {
      const q = url.searchParams
      if (
        q.get('response_type') !== 'code' ||
        q.get('client_id') !== client.id ||
        q.get('code_challenge_method') !== 'S256' ||
        (q.get('code_challenge') ?? '') === ''
      ) {
        return json(res, 400, { error: 'invalid_request' })
      }
      const code = `code-${randomBytes(8).toString('hex')}`
      codes.set(code, {
        challenge: q.get('code_challenge') as string,
        redirectUri: q.get('redirect_uri') ?? '',
        scope: q.get('scope') ?? '',
      })
      const back = new URL(q.get('redirect_uri') ?? '')
      back.searchParams.set('code', code)
      back.searchParams.set('state', q.get('state') ?? '')
      res.writeHead(302, { location: back.toString() })
      res.end()
      return
    }
    const form = new URLSearchParams(req.body)
    const clientOk = form.get('client_id') === client.id && form.get('client_secret') === client.secret
    if (url.pathname === '/token' && req.method === 'POST') {
      if (!clientOk) return json(res, 401, { error: 'invalid_client' })
      const grant = form.get('grant_type') ?? ''
      server.grants.push(grant)
      if (grant === 'authorization_code') {
        const c = codes.get(form.get('code') ?? '')
        codes.delete(form.get('code') ?? '')
        const verifier = form.get('code_verifier') ?? ''
        const challenge = createHash('sha256').update(verifier).digest('base64url')
        if (c === undefined || c.redirectUri !== form.get('redirect_uri') || c.challenge !== challenge)
          return json(res, 400, { error: 'invalid_grant' })
        return json(res, 200, issue(server.codeTokenSeconds, c.scope))
      }
      if (grant === 'refresh_token') {
        const rt = form.get('refresh_token') ?? ''
        if (!refresh.delete(rt) || server.revoked.has(rt)) return json(res, 400, { error: 'invalid_grant' })
        return json(res, 200, issue(3600, 'read'))
      }
      return json(res, 400, { error: 'unsupported_grant_type' })
    }
    if (url.pathname === '/revoke' && req.method === 'POST') {
      if (!clientOk) return json(res, 401, { error: 'invalid_client' })
      const token = form.get('token') ?? ''
      server.revoked.add(token)
      refresh.delete(token)
      access.delete(token)
      res.writeHead(200)
      res.end()
      return
    }
    if (url.pathname === '/api/me') {
      const token = (req.headers['authorization'] ?? '').replace(/^Bearer /, '')
      const exp = access.get(token)
      if (exp === undefined || exp < Date.now()) return json(res, 401, { error: 'invalid_token' })
      return json(res, 200, { subject: 'alice-at-provider', token_suffix: token.slice(-4) })
    }
    json(res, 404, { error: 'not_found' })
  }
  server.receiver = await startReceiver(t, tls, handler)
  server.url = `https://${tls.address}:${String(server.receiver.port)}`
  return server
}
