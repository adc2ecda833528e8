/*
 * CORS from CORS_ORIGINS: empty allows no cross-origin browser calls, `*` allows any origin, else
 * a comma-separated list of exact origins. Allowed origins are echoed (with Vary: Origin).
 *
 * One exception, whatever the setting: the page proxies of rendered components
 * (`/components/view/...`) accept `Origin: null`. Component pages are served with a CSP
 * `sandbox allow-scripts`, so they run in an opaque origin (their bundles cannot read this
 * origin's storage or cookies) and their proxy calls arrive cross-origin as `Origin: null`. Those
 * calls carry the page's view ticket in the body and nothing else: the preflight allows only
 * `content-type` (no Authorization, no X-API-Key), and Access-Control-Allow-Credentials is never
 * sent, so a browser can neither attach nor expose anything credentialed this way.
 */
export interface Cors {
  headersFor(origin: string, url: string): [string, string][]
  preflight(origin: string, url: string): [string, string][]
}

const ALLOW_HEADERS = 'authorization, content-type, x-api-key, x-request-id, last-event-id, x-application'
const EXPOSE_HEADERS = 'x-request-id, x-total-count, x-channel-id'
const METHODS = 'GET, POST, PUT, PATCH, DELETE, OPTIONS'

/** The ticket-authenticated page proxies (src/components/routes.ts, PAGE_PROXY_ROUTES). */
export const TICKET_PROXY_PREFIX = '/components/view/'

const opaqueTicketCall = (origin: string, url: string) => origin === 'null' && url.startsWith(TICKET_PROXY_PREFIX)

export function createCors(setting: string): Cors {
  const any = setting.trim() === '*'
  const allowed = new Set(
    setting
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '' && s !== '*'),
  )
  const allows = (origin: string) => origin !== '' && origin !== 'null' && (any || allowed.has(origin))
  return {
    headersFor(origin, url) {
      if (opaqueTicketCall(origin, url))
        return [
          ['access-control-allow-origin', 'null'],
          ['vary', 'Origin'],
          ['access-control-expose-headers', 'x-request-id'],
        ]
      if (!allows(origin)) return []
      return [
        ['access-control-allow-origin', origin],
        ['vary', 'Origin'],
        ['access-control-expose-headers', EXPOSE_HEADERS],
      ]
    },
    preflight(origin, url) {
      if (opaqueTicketCall(origin, url)) {
        return [
          ['access-control-allow-origin', 'null'],
          ['vary', 'Origin'],
          ['access-control-allow-methods', 'POST'],
          ['access-control-allow-headers', 'content-type'],
          ['access-control-max-age', '600'],
        ]
      }
      if (!allows(origin)) return []
      return [
        ['access-control-allow-origin', origin],
        ['vary', 'Origin'],
        ['access-control-allow-methods', METHODS],
        ['access-control-allow-headers', ALLOW_HEADERS],
        ['access-control-max-age', '600'],
      ]
    },
  }
}
