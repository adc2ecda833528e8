import type { Config } from '../kernel/config.ts'
import { publicBase } from '../files/handlers.ts'

/*
 * DNS rebinding protection (MCP transports: servers MUST validate the Origin header; 2025-11-25:
 * a present, invalid Origin is answered 403). A browser sends Origin with every cross-origin POST;
 * a page on a rebound name (evil.example resolving to this host) sends its own origin and a Host
 * that matches it, so only a fixed list tells a good origin from a bad one:
 *   - the platform's own public origin (PUBLIC_BASE_URL, else https://DOMAIN),
 *   - CORS_ORIGINS (`*`: any), the origins an admin lets call the API from a browser,
 *   - a loopback origin (localhost, 127.0.0.1, [::1], any port) only while no public origin is
 *     configured: a development platform on this machine, whose console is served from loopback.
 * `Origin: null` (an opaque origin: a sandboxed page) is never accepted. A request without Origin
 * is not a browser page's and passes: its credential decides, as everywhere else.
 */
const LOOPBACK: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]'])

function originOf(value: string): URL | null {
  try {
    return new URL(value)
  } catch {
    return null
  }
}

/** Whether a request with this Origin header (undefined: none) may be answered. */
export function originGuard(config: Config): (origin: string | undefined) => boolean {
  const base = publicBase(config)
  const own = base === '' ? null : (originOf(base)?.origin ?? null)
  const cors = config.CORS_ORIGINS.split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
  const any = cors.includes('*')
  const listed = new Set(cors.filter((s) => s !== '*'))
  return (origin: string | undefined): boolean => {
    if (origin === undefined || origin === '') return true
    if (origin === 'null') return false
    if (any || listed.has(origin) || origin === own) return true
    const url = originOf(origin)
    return (
      own === null &&
      url !== null &&
      (url.protocol === 'http:' || url.protocol === 'https:') &&
      LOOPBACK.has(url.hostname)
    )
  }
}
