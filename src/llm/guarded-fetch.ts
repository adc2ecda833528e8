import type { IncomingHttpHeaders } from 'node:http'
import { httpErrorOf, openExchange, type TransportOptions } from './transport.ts'

/*
 * A `fetch` for provider SDKs (the `openai` package takes one) that goes through the platform's one
 * guarded outbound client (`openExchange` → `guardedStream`): the address checks and pinning, the
 * first-byte and idle timeouts, the response size cap and the caller's AbortSignal all stay in
 * force. Only what an SDK needs of fetch is implemented: a method, headers, a string or byte body,
 * a signal.
 *
 * Failures are thrown as `LlmError`, a non-2xx answer included (`llm.http_error`, read by the same
 * code as the hand-written clients'), so an SDK's own retry and error-body handling never runs:
 * the SDK wraps the error as the `cause` of its connection error and the caller unwraps it (see
 * `openai.ts`).
 */
export function guardedLlmFetch(options: TransportOptions): typeof fetch {
  return async (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.toString() : input.url
    const headers = headersOf(init?.headers)
    const body = init?.body
    if (body !== undefined && body !== null && typeof body !== 'string' && !(body instanceof Uint8Array)) {
      throw new TypeError('the guarded fetch sends string or byte bodies only')
    }
    const res = await openExchange(
      url,
      { method: init?.method ?? 'GET', headers, ...(body === undefined || body === null ? {} : { body }), signal: init?.signal ?? undefined },
      options,
    )
    if (res.status < 200 || res.status > 299) throw await httpErrorOf(res)
    if (res.status === 204 || res.status === 205) {
      res.close()
      return new Response(null, { status: res.status, headers: toHeaders(res.headers) })
    }
    // The SDK's own type says Response; what it reads is the part GuardedResponse has (see there).
    return new GuardedResponse(res.status, res.url, new ResponseHeaders(res.headers), res.body) as unknown as Response
  }
}

/**
 * The part of a fetch `Response` the `openai` SDK (v6) reads of a 2xx streaming answer: `ok`,
 * `status`, `url`, `headers` and a `body` it iterates with `for await` (its shims take an async
 * iterable body as it is, the way polyfilled fetches hand it over; `ReadableStreamToAsyncIterable`
 * and `CancelReadableStream` in `openai/internal/shims`). The guarded chunks go through as they
 * are: wrapping them in a WHATWG ReadableStream and an undici Response cost about a third of the
 * client's CPU per streamed call (bench/README.md, adapter). Ending the loop early returns the
 * guarded iterator, which ends the exchange; so does the SDK's abort of the request's signal.
 */
class GuardedResponse {
  readonly ok = true
  readonly redirected = false
  readonly type = 'basic'
  readonly bodyUsed = false
  readonly status: number
  readonly url: string
  readonly headers: ResponseHeaders
  readonly body: AsyncIterable<Uint8Array>
  constructor(status: number, url: string, headers: ResponseHeaders, body: AsyncIterable<Uint8Array>) {
    this.status = status
    this.url = url
    this.headers = headers
    this.body = body
  }

  get statusText(): string {
    return ''
  }

  /** Whole-body reads (a non-streaming SDK call): the chunks joined. */
  async text(): Promise<string> {
    const parts: Uint8Array[] = []
    for await (const chunk of this.body) parts.push(chunk)
    return Buffer.concat(parts).toString('utf8')
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text())
  }
}

/**
 * The request's headers as the outbound client takes them. The platform's SDK build hands over a
 * plain object of lower-case names already (`openai-sdk.ts`), used as it is; a Headers (the SDK's
 * own build) is read without copying it into another.
 */
function headersOf(given: RequestInit['headers']): Record<string, string> {
  if (given === undefined) return {}
  if (!(given instanceof Headers) && !Array.isArray(given) && isLowerCaseRecord(given)) return given
  const headers: Record<string, string> = {}
  ;(given instanceof Headers ? given : new Headers(given)).forEach((value, name) => {
    headers[name] = value
  })
  return headers
}

function isLowerCaseRecord(given: object): given is Record<string, string> {
  for (const [name, value] of Object.entries(given)) if (typeof value !== 'string' || name !== name.toLowerCase()) return false
  return true
}

function toHeaders(incoming: IncomingHttpHeaders): Headers {
  const headers = new Headers()
  for (const [name, value] of Object.entries(incoming)) {
    if (Array.isArray(value)) for (const v of value) headers.append(name, v)
    else if (value !== undefined) headers.set(name, value)
  }
  return headers
}

/**
 * The read side of `Headers` over Node's parsed response headers (names already lower case): what
 * the SDK asks of a response's headers (`get`, `has`, `entries`, iteration), without building an
 * undici Headers for every call.
 */
class ResponseHeaders {
  private readonly incoming: IncomingHttpHeaders
  constructor(incoming: IncomingHttpHeaders) {
    this.incoming = incoming
  }

  get(name: string): string | null {
    const v = this.incoming[name.toLowerCase()]
    return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v
  }

  has(name: string): boolean {
    return this.incoming[name.toLowerCase()] !== undefined
  }

  *entries(): IterableIterator<[string, string]> {
    for (const name of Object.keys(this.incoming)) {
      const v = this.get(name)
      if (v !== null) yield [name, v]
    }
  }

  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries()
  }

  forEach(fn: (value: string, name: string) => void): void {
    for (const [name, value] of this.entries()) fn(value, name)
  }
}
