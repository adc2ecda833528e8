import type { IncomingMessage } from 'node:http'

/*
 * The console's session cookies. Both tokens live only here, in HttpOnly SameSite=Strict cookies
 * (Secure when the console is reached over https): no script on the page, no other origin and no
 * stored script in a resource can read them (docs/console.md "Where the tokens live").
 */
export const ACCESS_COOKIE = 'console_at'
export const REFRESH_COOKIE = 'console_rt'

export function readCookies(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {}
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=')
    if (eq <= 0) continue
    const name = part.slice(0, eq).trim()
    const value = part.slice(eq + 1).trim()
    try {
      out[name] = decodeURIComponent(value)
    } catch {
      // a cookie this server did not write: ignored
    }
  }
  return out
}

/**
 * Whether the browser reached the console over https (directly, or through a TLS-terminating proxy:
 * X-Forwarded-Proto, believed only when the peer is a trusted proxy).
 */
export function isHttps(req: IncomingMessage, trustForwardedProto: boolean): boolean {
  if ((req.socket as { encrypted?: boolean }).encrypted === true) return true
  return trustForwardedProto && req.headers['x-forwarded-proto'] === 'https'
}

export function cookie(name: string, value: string, maxAgeSeconds: number, secure: boolean): string {
  return [
    `${name}=${encodeURIComponent(value)}`,
    'Path=/',
    `Max-Age=${String(Math.max(0, Math.floor(maxAgeSeconds)))}`,
    'HttpOnly',
    'SameSite=Strict',
    ...(secure ? ['Secure'] : []),
  ].join('; ')
}

export const clearCookie = (name: string, secure: boolean): string => cookie(name, '', 0, secure)

/** The `exp` (seconds) of a JWT, read without verifying: only to refresh before it expires (the gateway verifies). */
export function jwtExpiry(token: string): number | undefined {
  const payload = token.split('.')[1]
  if (payload === undefined) return undefined
  try {
    const exp = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown }).exp
    return typeof exp === 'number' ? exp : undefined
  } catch {
    return undefined
  }
}
