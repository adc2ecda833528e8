import { httpErrorOf, openExchange, type TransportOptions } from './transport.ts'

/*
 * A `fetch` for provider SDKs (the `openai` package takes one) that goes through the platform's one
 * guarded outbound client (`openExchange` → `guardedStream`): the address checks and pinning, the
 * first-byte and idle timeouts, the response size cap and the caller's AbortSignal all stay in
 * force. Only what an SDK needs of fetch is implemented: a method, headers, a string or byte body,
 * a signal; a 2xx answer is a `Response` whose body streams the guarded chunks (cancelling it ends
 * the exchange).
 *
 * Failures are thrown as `LlmError`, a non-2xx answer included (`llm.http_error`, read by the same
 * code as the hand-written clients'), so an SDK's own retry and error-body handling never runs:
 * the caller unwraps the error the SDK wraps it in (see `openai.ts`).
 */
export function guardedLlmFetch(options: TransportOptions): typeof fetch {
  return async (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.toString() : input.url
    const headers: Record<string, string> = {}
    new Headers(init?.headers).forEach((value, name) => {
      headers[name] = value
    })
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
    const responseHeaders = new Headers()
    for (const [name, value] of Object.entries(res.headers)) {
      if (Array.isArray(value)) for (const v of value) responseHeaders.append(name, v)
      else if (value !== undefined) responseHeaders.set(name, value)
    }
    if (res.status === 204 || res.status === 205) {
      res.close()
      return new Response(null, { status: res.status, headers: responseHeaders })
    }
    const iterator = res.body[Symbol.asyncIterator]()
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const next = await iterator.next()
        if (next.done === true) controller.close()
        else controller.enqueue(next.value)
      },
      async cancel() {
        // The SDK cancels when its consumer breaks out of the loop: that ends the exchange.
        res.close()
        await iterator.return?.()
      },
    })
    return new Response(stream, { status: res.status, headers: responseHeaders })
  }
}
