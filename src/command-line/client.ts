import { readCredentials, tokenExpiry, writeCredentials, type Credentials } from './credentials.ts'

/*
 * The HTTP side of every command: the base URL and the credential (flags and environment first,
 * then the stored login), JSON requests, the platform's error body as a readable message, and a
 * stored login's access token renewed with its refresh token when it expired (before the request
 * when its `exp` says so, or after a 401 `auth.token_expired`).
 */

export const DEFAULT_URL = 'http://localhost:8000'

/** A refused request: the platform's `{detail, code, errors}` body, or what the connection said. */
export class ApiError extends Error {
  override name = 'ApiError'
  readonly status: number
  readonly code: string | undefined
  readonly errors: { path: string; message: string; line?: number; column?: number }[]
  readonly body: unknown
  constructor(
    message: string,
    status: number,
    code?: string,
    errors: { path: string; message: string; line?: number; column?: number }[] = [],
    body?: unknown,
  ) {
    super(message)
    this.status = status
    this.code = code
    this.errors = errors
    this.body = body
  }
}

export interface ClientOptions {
  /** `--url`. */
  url?: string
  env?: NodeJS.ProcessEnv
  credentialsFile?: string
  /** Send no credential at all (the login itself). */
  anonymous?: boolean
}

export interface Client {
  readonly url: string
  /** The credential sent, if any. */
  readonly token: string | undefined
  /** A JSON request; answers the parsed body (text when it is not JSON; undefined for 204). */
  json<T = unknown>(method: string, path: string, body?: unknown): Promise<T>
  /** A request whose response the caller reads (SSE); refused statuses throw ApiError. */
  raw(method: string, path: string, init?: { body?: unknown; signal?: AbortSignal; accept?: string }): Promise<Response>
}

async function errorOf(res: Response): Promise<ApiError> {
  const text = await res.text()
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {
    // not JSON: a proxy's page, shown as it is
  }
  const b = (typeof body === 'object' && body !== null ? body : {}) as {
    detail?: unknown
    code?: unknown
    errors?: unknown
  }
  const detail = typeof b.detail === 'string' ? b.detail : text.slice(0, 300) || res.statusText
  const errors = Array.isArray(b.errors) ? (b.errors as { path: string; message: string }[]) : []
  return new ApiError(
    `${String(res.status)} ${detail}`,
    res.status,
    typeof b.code === 'string' ? b.code : undefined,
    errors,
    body,
  )
}

export function createClient(o: ClientOptions = {}): Client {
  const env = o.env ?? process.env
  const stored = o.anonymous === true ? null : readCredentials(o.credentialsFile)
  const envUrl = env['PLATFORM_URL']
  const envToken = env['PLATFORM_TOKEN']
  const url = (
    o.url ??
    (envUrl !== undefined && envUrl !== '' ? envUrl : undefined) ??
    stored?.url ??
    DEFAULT_URL
  ).replace(/\/+$/, '')
  // the stored login is used only against the platform it was made for
  let creds: Credentials | null = stored !== null && stored.url.replace(/\/+$/, '') === url ? stored : null
  const fixedToken = o.anonymous !== true && envToken !== undefined && envToken !== '' ? envToken : undefined

  const refresh = async (): Promise<boolean> => {
    if (creds?.refresh === undefined) return false
    const res = await fetch(`${url}/auth/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ refresh_token: creds.refresh }),
    })
    if (!res.ok) return false
    const t = (await res.json()) as { access_token: string; refresh_token: string }
    creds = { url, token: t.access_token, refresh: t.refresh_token }
    writeCredentials(creds, o.credentialsFile)
    return true
  }

  const token = (): string | undefined => fixedToken ?? creds?.token

  const send = async (
    method: string,
    path: string,
    init: { body?: unknown; signal?: AbortSignal; accept?: string },
  ): Promise<Response> => {
    if (fixedToken === undefined && creds !== null) {
      const exp = tokenExpiry(creds.token)
      if (exp !== null && exp < Date.now() + 10_000) await refresh()
    }
    const go = () => {
      const headers: Record<string, string> = { accept: init.accept ?? 'application/json' }
      const t = token()
      if (t !== undefined) headers['authorization'] = `Bearer ${t}`
      if (init.body !== undefined) headers['content-type'] = 'application/json'
      return fetch(`${url}${path}`, {
        method,
        headers,
        ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
        ...(init.signal === undefined ? {} : { signal: init.signal }),
      })
    }
    let res: Response
    try {
      res = await go()
    } catch (err) {
      if (init.signal?.aborted === true) throw err
      throw new ApiError(
        `cannot reach ${url}: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`,
        0,
      )
    }
    if (res.status === 401 && fixedToken === undefined) {
      const e = await errorOf(res.clone())
      if (e.code === 'auth.token_expired' && (await refresh())) res = await go()
    }
    if (!res.ok) throw await errorOf(res)
    return res
  }

  return {
    url,
    get token() {
      return token()
    },
    async json<T>(method: string, path: string, body?: unknown): Promise<T> {
      const res = await send(method, path, { body })
      if (res.status === 204) return undefined as T
      const text = await res.text()
      try {
        return JSON.parse(text) as T
      } catch {
        return text as T
      }
    },
    raw: (method, path, init = {}) => send(method, path, init),
  }
}
