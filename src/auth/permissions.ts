/*
 * The permission grammar: `<service>.<resource>[/<ns>/<name>].<action>:<scope>` with
 * scope `own` or `all`; `:all` satisfies `:own`; `*` matches one segment; a trailing `*` (alone or
 * ending a segment) is a prefix wildcard; otherwise segment counts must match. Grants only.
 * This is the one matcher: routes, tool calls and proxy calls all ask `hasPermission`.
 */
export type Scope = 'own' | 'all'

interface Parsed {
  segments: string[]
  scope: Scope
}

const cache = new Map<string, Parsed | null>()

function parse(permission: string): Parsed | null {
  const hit = cache.get(permission)
  if (hit !== undefined) return hit
  const colon = permission.lastIndexOf(':')
  const scope = colon < 0 ? '' : permission.slice(colon + 1)
  const body = colon < 0 ? '' : permission.slice(0, colon)
  const parsed =
    (scope === 'own' || scope === 'all') && body !== '' ? { segments: body.split(/[./]/), scope: scope as Scope } : null
  if (cache.size > 10_000) cache.clear()
  cache.set(permission, parsed)
  return parsed
}

export function isValidPermission(permission: string): boolean {
  return parse(permission) !== null
}

/** Whether one granted permission covers one required permission. */
export function permissionMatches(granted: string, required: string): boolean {
  const g = parse(granted)
  const r = parse(required)
  if (g === null || r === null) return false
  if (g.scope === 'own' && r.scope === 'all') return false
  const gs = g.segments
  const rs = r.segments
  for (let i = 0; i < gs.length; i++) {
    const seg = gs[i] as string
    const last = i === gs.length - 1
    if (last && seg.endsWith('*')) {
      // prefix wildcard: `platform.*` or `platform.agents/sales-*`
      const prefix = seg.slice(0, -1)
      return rs.length > i && (rs[i] as string).startsWith(prefix)
    }
    if (i >= rs.length) return false
    if (seg !== '*' && seg !== rs[i]) return false
  }
  return gs.length === rs.length
}

export function hasPermission(granted: readonly string[], required: string): boolean {
  for (const g of granted) if (permissionMatches(g, required)) return true
  return false
}

/** Grants stored as `{permission: true}` objects (roles, API keys) as a list. */
export function grantsOf(object: Record<string, unknown>): string[] {
  return Object.entries(object)
    .filter(([, v]) => v === true)
    .map(([k]) => k)
}
