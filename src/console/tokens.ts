import { jwtExpiry } from './cookies.ts'
import { upstreamJson, type Upstream } from './upstream.ts'

/*
 * Refreshing a session's tokens, once per refresh token. Every refresh token works once and
 * comes back replaced (docs/http-api.md), and the page fires several requests at a time: the
 * first request whose access token is (nearly) expired refreshes, the others wait for that same
 * refresh, and a request arriving a moment later with the old cookie still gets the new tokens
 * (kept for REMEMBER_MS) rather than spending the old refresh token twice.
 * Per console process: behind several console replicas, route a browser to one (sticky) or accept
 * that a rare race signs it out.
 */
export interface TokenPair {
  access: string
  refresh: string
  /** Seconds until the access token expires (as the API said). */
  expiresIn: number
}

const REMEMBER_MS = 60_000
/** Refresh this long before the access token expires, so a request never reaches the gateway with a dying token. */
export const EARLY_SECONDS = 30

export class TokenKeeper {
  readonly #inflight = new Map<string, Promise<TokenPair | undefined>>()
  readonly #up: Upstream
  constructor(up: Upstream) {
    this.#up = up
  }

  /** Whether an access token must be refreshed before use (missing, or expiring within EARLY_SECONDS). */
  static stale(access: string | undefined, nowSeconds = Date.now() / 1000): boolean {
    if (access === undefined || access === '') return true
    const exp = jwtExpiry(access)
    return exp === undefined || exp - nowSeconds < EARLY_SECONDS
  }

  /** New tokens for a refresh token (undefined: refused, the session is over); `forwardedFor`: the X-Forwarded-For to send. */
  refresh(refreshToken: string, forwardedFor?: string): Promise<TokenPair | undefined> {
    let p = this.#inflight.get(refreshToken)
    if (p === undefined) {
      p = this.#call(refreshToken, forwardedFor)
      this.#inflight.set(refreshToken, p)
      void p.finally(() => setTimeout(() => this.#inflight.delete(refreshToken), REMEMBER_MS).unref())
    }
    return p
  }

  async #call(refreshToken: string, forwardedFor: string | undefined): Promise<TokenPair | undefined> {
    const r = await upstreamJson(this.#up, 'POST', '/auth/refresh', {
      body: { refresh_token: refreshToken },
      ...(forwardedFor === undefined ? {} : { headers: { 'x-forwarded-for': forwardedFor } }),
    })
    if (r.status !== 200) return undefined
    const b = r.body as { access_token: string; refresh_token: string; expires_in: number }
    return { access: b.access_token, refresh: b.refresh_token, expiresIn: b.expires_in }
  }
}
