/*
 * The one way console code calls the platform: through the console server's proxy (same origin),
 * which adds the caller's token from its HttpOnly cookie — no token is ever visible to this code.
 * Unsafe methods carry `X-Console-Request: 1`, which the proxy requires (a cross-site form cannot
 * set a header). Errors arrive as the platform's one error body and become an ApiError.
 */

/** An API answer other than 2xx: the platform's error body (`detail`, `code`, field `errors`). */
export class ApiError extends Error {
  readonly status: number
  readonly code: string
  /** Field issues of a 422 (`path` dotted, e.g. `name` or `tools.0.name`; a JSON pointer is accepted too). */
  readonly fields?: { path: string; message: string }[]
  constructor(status: number, code: string, message: string, fields?: { path: string; message: string }[]) {
    super(message)
    this.name = 'ApiError'
    this.status = status
    this.code = code
    if (fields !== undefined) this.fields = fields
  }
  /** The messages for one field (its own path or one inside it, `tools` for `tools.0.name`), joined. */
  fieldMessage(field: string): string | undefined {
    const hits = (this.fields ?? []).filter((f) => {
      const p = normalizePath(f.path)
      return p === field || p.startsWith(`${field}.`)
    })
    return hits.length === 0 ? undefined : hits.map((f) => f.message).join('; ')
  }
}

/** `/tools/0/name` or `tools.0.name` → `tools.0.name`: one dotted form to compare with field names. */
export function normalizePath(path: string): string {
  const parts = path.split(/[/.]/).filter((p) => p !== '')
  return parts.join('.')
}

export type Query = Record<string, string | number | boolean | undefined>

export interface ApiOptions {
  query?: Query
  body?: unknown
  signal?: AbortSignal
  /**
   * The path is a runtime route at the API's root (`/chats/…`, `/functions/…/execute`) rather than
   * a management route under `/api/v1`.
   */
  runtime?: boolean
}

/** Where the console's proxy forwards: management routes under /api/v1, runtime routes under /rt. */
export function proxyUrl(path: string, runtime: boolean, query?: Query): string {
  const base = runtime ? `/rt${path}` : `/api/v1${path}`
  const params = new URLSearchParams()
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== '') params.set(k, String(v))
  const qs = params.toString()
  return qs === '' ? base : `${base}?${qs}`
}

/** Listeners told when the session is gone (401 after the proxy's own refresh): the shell shows sign-in. */
const signedOutListeners = new Set<() => void>()
export function onSignedOut(fn: () => void): () => void {
  signedOutListeners.add(fn)
  return () => signedOutListeners.delete(fn)
}

export const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/** Turns a non-2xx answer into an ApiError (the platform's error body, or the status text). */
export async function errorOf(res: Response): Promise<ApiError> {
  let body: { detail?: unknown; code?: unknown; errors?: unknown } = {}
  try {
    body = (await res.json()) as typeof body
  } catch {
    // not JSON (a proxy error page): the status says enough
  }
  const detail = typeof body.detail === 'string' ? body.detail : res.statusText || `HTTP ${String(res.status)}`
  const code = typeof body.code === 'string' ? body.code : `http.${String(res.status)}`
  const fields = Array.isArray(body.errors) ? (body.errors as { path: string; message: string }[]) : undefined
  if (res.status === 401) for (const fn of signedOutListeners) fn()
  return new ApiError(res.status, code, detail, fields)
}

/**
 * Calls the API. `path` is relative to `/api/v1` (e.g. `/agents/default`), or to the API root
 * with `runtime: true`. Resolves with the parsed JSON (undefined for 204), rejects with ApiError.
 */
export async function api<T>(method: string, path: string, opts: ApiOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' }
  if (UNSAFE.has(method.toUpperCase())) headers['x-console-request'] = '1'
  const init: RequestInit = { method, headers, credentials: 'same-origin' }
  if (opts.body !== undefined) {
    headers['content-type'] = 'application/json'
    init.body = JSON.stringify(opts.body)
  }
  if (opts.signal !== undefined) init.signal = opts.signal
  const res = await fetch(proxyUrl(path, opts.runtime === true, opts.query), init)
  if (!res.ok) throw await errorOf(res)
  if (res.status === 204) return undefined as T
  const type = res.headers.get('content-type') ?? ''
  return (type.includes('json') ? await res.json() : await res.text()) as T
}
