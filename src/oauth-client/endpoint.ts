import { AppError } from '../kernel/errors.ts'
import { guardedFetch } from '../platform/outbound-http.ts'
import type { ProviderCall } from './deps.ts'

/*
 * The two POSTs to an authorization server, through the guarded outbound client with the using
 * feature's policy, no redirects: the token endpoint (RFC 6749 §4.1.3 code, §6 refresh;
 * client_secret_post when there is a secret) and revocation (RFC 7009, best effort).
 */
export interface TokenAnswer {
  access_token: string
  refresh_token?: string
  token_type?: string
  expires_in?: number
  scope?: string
}

export interface TokenEndpoint extends ProviderCall {
  url: string
  clientId: string
  clientSecret: string | null
  /** Sent with every token request besides the grant's own parameters (MCP: `resource`, RFC 8707). */
  extra?: Record<string, string>
}

const form = (fields: Record<string, string>, clientId: string, clientSecret: string | null): string => {
  const body = new URLSearchParams({ ...fields, client_id: clientId })
  if (clientSecret !== null) body.set('client_secret', clientSecret)
  return body.toString()
}

export async function tokenRequest(ep: TokenEndpoint, fields: Record<string, string>): Promise<TokenAnswer> {
  const res = await guardedFetch(
    ep.url,
    {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: form({ ...ep.extra, ...fields }, ep.clientId, ep.clientSecret),
      timeoutMs: ep.timeoutMs,
      ...ep.policy,
      maxRedirects: 0,
    },
    ep.deps,
  )
  let parsed: Record<string, unknown> = {}
  try {
    parsed = JSON.parse(res.body.toString('utf8')) as Record<string, unknown>
  } catch {
    parsed = {}
  }
  if (res.status < 200 || res.status >= 300 || typeof parsed['access_token'] !== 'string') {
    const why = typeof parsed['error'] === 'string' ? parsed['error'] : `HTTP ${String(res.status)}`
    throw AppError.of('oauth.token_failed', `the provider refused the token request (${why})`)
  }
  return parsed as unknown as TokenAnswer
}

/** RFC 7009: true when the server accepted it (200). Throws what the guarded client throws. */
export async function revokeToken(
  ep: ProviderCall & { url: string; clientId: string; clientSecret: string | null },
  token: string,
  hint: 'access_token' | 'refresh_token',
): Promise<boolean> {
  const res = await guardedFetch(
    ep.url,
    {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form({ token, token_type_hint: hint }, ep.clientId, ep.clientSecret),
      timeoutMs: ep.timeoutMs,
      ...ep.policy,
      maxRedirects: 0,
    },
    ep.deps,
  )
  return res.status === 200
}
