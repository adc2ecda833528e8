import { ApiError } from '../../api/client.ts'

/*
 * The runtime surface (`/chats/…`, `/functions/…/execute`, `/files/…`, `/jobs/…`) through the
 * console's cookie-holding proxy. `api()` of the shell speaks to `/api/v1`; the work pages also
 * need the runtime routes and raw responses (streams, uploads, downloads), so this is the one
 * place that knows where the proxy serves them.
 */
export const RUNTIME_PREFIX = '/runtime'

export function runtimeUrl(path: string, query?: Record<string, string | number | undefined>): string {
  const qs = new URLSearchParams()
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) qs.set(k, String(v))
  const s = qs.toString()
  return `${RUNTIME_PREFIX}${path}${s === '' ? '' : `?${s}`}`
}

/** The error body every route answers, as an ApiError. */
export async function errorOf(res: Response): Promise<ApiError> {
  let body: { detail?: string; code?: string; errors?: { path: string; message: string }[] } = {}
  try {
    body = (await res.json()) as typeof body
  } catch {
    // not JSON: the status says enough
  }
  return new ApiError(res.status, body.code ?? 'http.error', body.detail ?? res.statusText, body.errors ?? [])
}

/** A JSON call on the runtime surface. */
export async function runtime<T>(
  method: string,
  path: string,
  opts: { body?: unknown; signal?: AbortSignal; query?: Record<string, string | number | undefined> } = {},
): Promise<T> {
  const res = await fetch(runtimeUrl(path, opts.query), {
    method,
    credentials: 'same-origin',
    headers: opts.body === undefined ? {} : { 'content-type': 'application/json' },
    body: opts.body === undefined ? null : JSON.stringify(opts.body),
    signal: opts.signal ?? null,
  })
  if (!res.ok) throw await errorOf(res)
  if (res.status === 204) return undefined as T
  return (await res.json()) as T
}
