/*
 * CORS from CORS_ORIGINS: empty allows no cross-origin browser calls, `*` allows any origin, else
 * a comma-separated list of exact origins. Allowed origins are echoed (with Vary: Origin).
 */
export interface Cors {
  headersFor(origin: string): [string, string][]
  preflight(origin: string): [string, string][]
}

const ALLOW_HEADERS = 'authorization, content-type, x-api-key, x-request-id, last-event-id, x-application'
const EXPOSE_HEADERS = 'x-request-id, x-total-count, x-channel-id'
const METHODS = 'GET, POST, PUT, PATCH, DELETE, OPTIONS'

export function createCors(setting: string): Cors {
  const any = setting.trim() === '*'
  const allowed = new Set(setting.split(',').map((s) => s.trim()).filter((s) => s !== '' && s !== '*'))
  const allows = (origin: string) => origin !== '' && (any || allowed.has(origin))
  return {
    headersFor(origin) {
      if (!allows(origin)) return []
      return [
        ['access-control-allow-origin', origin],
        ['vary', 'Origin'],
        ['access-control-expose-headers', EXPOSE_HEADERS],
      ]
    },
    preflight(origin) {
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
