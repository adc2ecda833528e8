import type { IncomingHttpHeaders } from 'node:http'
import { isIP } from 'node:net'
import { rootCertificates } from 'node:tls'
import { Pool, type Dispatcher } from 'undici'
import { AppError } from '../kernel/errors.ts'
import type { ResolvedAddress, ResolvedTarget } from './outbound-http.ts'

/*
 * The exchange of the guarded client (`guardedStream` and `guardedFetch` in outbound-http.ts, after
 * their checks 1–3): the request goes to the checked address (step 4) through an undici connection
 * pool and its low-level dispatch, and the body comes back chunk by chunk with the head deadline,
 * the idle timeout, the size cap and the caller's signal (`guardedFetch` buffers it under its own
 * deadline).
 *
 * Why not `http.request`: an LLM provider call is the hot path of every chat turn and adapter
 * request, and Node's ClientRequest / IncomingMessage machinery (header validation, the agent's
 * socket hand-over on a later tick, the 'finish' event, a Readable and its async iterator per
 * response) cost about 40 µs of latency and 50 µs of CPU per call against the same exchange
 * dispatched by undici (bench/findings-log.md, stop 30; with a 1 ms pause between calls, as a chat's
 * calls come, 90-120 µs of latency). The checks are the same code before either.
 *
 * Pools are kept per pinned origin and TLS settings, so a kept connection only ever goes to an
 * address that passed the check, with the same certificate rules (the name as SNI and certificate
 * name; an IP literal gets no SNI and its certificate must name the address). A pool opens a
 * connection when a call finds every one busy, and one whose response ended in the same tick may
 * not be handed back yet: N calls in flight settle on up to 2N kept connections (tested).
 */

export interface PinnedRequest {
  /**
   * What `resolveTarget` checked: the URL (its host is the Host header, the SNI and the
   * certificate's name) and the addresses; the connection goes to the first.
   */
  target: ResolvedTarget
  method: string
  headers: Record<string, string>
  body?: string | Uint8Array
  /** Epoch ms by which the response's head must have arrived (connect and TLS included). */
  deadline: number
  idleTimeoutMs: number
  maxBytes: number
  signal?: AbortSignal
  /** Extra CA certificates, added to Node's roots. */
  ca?: string | Buffer | readonly (string | Buffer)[]
}

export interface PinnedStream {
  status: number
  headers: IncomingHttpHeaders
  url: string
  /**
   * The body chunk by chunk; iterate it once. The exchange ends when the loop ends, also on an
   * early `break`. Errors are `outbound.*` AppErrors (timeout, aborted, connect_failed, response_too_large).
   */
  body: AsyncIterable<Buffer>
  /**
   * Ends the exchange without reading (the rest of) the body; idempotent, a no-op once the body is
   * complete. The body, if iterated, throws `reason` (default `outbound.aborted`).
   */
  close(reason?: AppError): void
}

export const timeoutError = (): AppError =>
  new AppError(504, 'outbound.timeout', 'the remote host did not answer in time')
export const abortedError = (signal: AbortSignal | undefined): AppError =>
  new AppError(499, 'outbound.aborted', 'the request was aborted', { cause: signal?.reason })
export const tooLargeError = (maxBytes: number): AppError =>
  new AppError(502, 'outbound.response_too_large', `the response exceeds ${String(maxBytes)} bytes`)

/*
 * Idle connections stay open a minute (as the agents did), so a chat's next call finds one; a
 * server's own keep-alive hint shortens that. Pools beyond POOLS_KEPT (origins × TLS settings)
 * are closed oldest first, after their requests in flight.
 */
const POOLS_KEPT = 256
const pools = new Map<string, Pool>()
const caIds = new WeakMap<object, number>()
let nextCaId = 0

function caKey(ca: NonNullable<PinnedRequest['ca']>): string {
  if (typeof ca === 'string') return ca
  let id = caIds.get(ca)
  if (id === undefined) caIds.set(ca, (id = ++nextCaId))
  return `#${String(id)}`
}

function poolFor(r: PinnedRequest, secure: boolean, port: number): { pool: Pool; origin: string } {
  const { address, family } = r.target.addresses[0] as ResolvedAddress
  const origin = `${secure ? 'https' : 'http'}://${family === 6 ? `[${address}]` : address}:${String(port)}`
  const servername = secure && isIP(r.target.host) === 0 ? r.target.host : undefined
  const key = `${origin} ${servername ?? ''}${r.ca === undefined ? '' : ` ${caKey(r.ca)}`}`
  let pool = pools.get(key)
  if (pool === undefined) {
    if (pools.size >= POOLS_KEPT) {
      const [oldest, old] = pools.entries().next().value as [string, Pool]
      pools.delete(oldest)
      void old.close().catch(() => undefined)
    }
    const extra =
      r.ca === undefined ? [] : Array.isArray(r.ca) ? (r.ca as (string | Buffer)[]) : [r.ca as string | Buffer]
    pool = new Pool(origin, {
      // the deadline and the idle timeout are this file's own (the consumer's time does not count)
      headersTimeout: 0,
      bodyTimeout: 0,
      keepAliveTimeout: 60_000,
      ...(secure
        ? {
            connect: {
              ...(servername === undefined ? {} : { servername }),
              ...(extra.length > 0 ? { ca: [...rootCertificates, ...extra] } : {}),
            },
          }
        : {}),
    })
    pools.set(key, pool)
  }
  return { pool, origin }
}

/** Response headers as Node hands them out: lower-case names, repeated ones joined by ", " (set-cookie: an array). */
function headersOf(raw: Buffer[]): IncomingHttpHeaders {
  const out: Record<string, string | string[]> = {}
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = (raw[i] as Buffer).toString('latin1').toLowerCase()
    const value = (raw[i + 1] as Buffer).toString('latin1')
    const prev = out[name]
    if (name === 'set-cookie') {
      if (Array.isArray(prev)) prev.push(value)
      else out[name] = [value]
    } else out[name] = prev === undefined ? value : `${String(prev)}, ${value}`
  }
  return out
}

/** Bytes queued for a consumer that has not asked for them yet before the socket is paused. */
const HIGH_WATER = 256 * 1024

/**
 * Sends the request to the pinned address; resolves once the response's head arrives (the body
 * then streams through `body`), rejects with `outbound.timeout`, `outbound.aborted` or
 * `outbound.connect_failed` before that.
 */
export function openPinnedExchange(r: PinnedRequest): Promise<PinnedStream> {
  const { url, host } = r.target
  const secure = url.protocol === 'https:'
  const port = url.port === '' ? (secure ? 443 : 80) : Number(url.port)
  const { pool, origin } = poolFor(r, secure, port)
  const { signal } = r
  return new Promise<PinnedStream>((resolve, reject) => {
    let phase: 'head' | 'body' | 'over' = 'head'
    // the request's abort, known once undici writes it (a failure before that aborts it then)
    let abortRequest: ((err?: Error) => void) | undefined
    let cancelled: Error | undefined
    const cancel = (err: Error): void => {
      if (cancelled !== undefined) return
      cancelled = err
      abortRequest?.(err)
    }
    const onHeadAbort = (): void => failHead(abortedError(signal))
    const timer = setTimeout(() => failHead(timeoutError()), Math.max(0, r.deadline - Date.now()))
    signal?.addEventListener('abort', onHeadAbort, { once: true })
    const failHead = (err: AppError): void => {
      if (phase !== 'head') return
      phase = 'over'
      clearTimeout(timer)
      signal?.removeEventListener('abort', onHeadAbort)
      cancel(err)
      reject(err)
    }

    // the body, queued for the consumer; the socket is paused while too much waits
    const queue: Buffer[] = []
    let queued = 0
    let size = 0
    let complete = false
    let bodyError: Error | undefined
    let wake: (() => void) | undefined
    let resume: (() => void) | undefined
    let paused = false
    const wakeUp = (): void => {
      const w = wake
      wake = undefined
      w?.()
    }
    const onBodyAbort = (): void => {
      bodyError ??= abortedError(signal)
      cancel(bodyError)
      wakeUp()
    }
    const release = (): void => signal?.removeEventListener('abort', onBodyAbort)

    async function* body(): AsyncGenerator<Buffer, void, undefined> {
      // one idle timer, re-armed when the consumer asks for the next chunk: a slow consumer is
      // never mistaken for a silent server
      let waiting = true
      const idle: NodeJS.Timeout = setTimeout(function onIdle() {
        if (!waiting) {
          idle.refresh()
          return
        }
        bodyError ??= new AppError(
          504,
          'outbound.timeout',
          `the remote host sent nothing for ${String(r.idleTimeoutMs)} ms`,
        )
        cancel(bodyError)
        wakeUp()
      }, r.idleTimeoutMs)
      try {
        for (;;) {
          const chunk = queue.shift()
          if (chunk !== undefined) {
            queued -= chunk.length
            if (paused && queued === 0) {
              paused = false
              resume?.()
            }
            waiting = false
            yield chunk
            waiting = true
            idle.refresh()
            continue
          }
          if (bodyError !== undefined) throw bodyError
          if (complete) return
          await new Promise<void>((w) => (wake = w))
        }
      } finally {
        clearTimeout(idle)
        release()
        // ended early (a break, an error): the exchange ends with it
        if (!complete) cancel(new AppError(499, 'outbound.aborted', 'the response was not read to its end'))
      }
    }

    const handler: Dispatcher.DispatchHandlers = {
      onConnect(abort) {
        abortRequest = abort
        if (cancelled !== undefined) abort(cancelled)
      },
      onHeaders(status, raw, resumeSocket) {
        if (status < 200) return true
        if (phase !== 'head') return false
        phase = 'body'
        clearTimeout(timer)
        signal?.removeEventListener('abort', onHeadAbort)
        signal?.addEventListener('abort', onBodyAbort, { once: true })
        resume = resumeSocket
        const stream: PinnedStream = {
          status,
          headers: headersOf(raw),
          url: url.toString(),
          body: body(),
          close: (reason) => {
            release()
            if (complete) return
            bodyError ??= reason ?? new AppError(499, 'outbound.aborted', 'the response was closed')
            cancel(bodyError)
            wakeUp()
          },
        }
        resolve(stream)
        return true
      },
      onData(chunk) {
        size += chunk.length
        if (size > r.maxBytes) {
          bodyError ??= tooLargeError(r.maxBytes)
          cancel(bodyError)
          wakeUp()
          return false
        }
        queue.push(chunk)
        queued += chunk.length
        wakeUp()
        if (queued < HIGH_WATER) return true
        paused = true
        return false
      },
      onComplete() {
        complete = true
        release()
        wakeUp()
      },
      onError(err) {
        if (phase === 'head') {
          phase = 'over'
          clearTimeout(timer)
          signal?.removeEventListener('abort', onHeadAbort)
          reject(
            err instanceof AppError
              ? err
              : new AppError(502, 'outbound.connect_failed', `request to ${host} failed: ${err.message}`, {
                  cause: err,
                }),
          )
          return
        }
        bodyError ??=
          err instanceof AppError
            ? err
            : new AppError(502, 'outbound.connect_failed', `the response broke off: ${err.message}`, { cause: err })
        release()
        wakeUp()
      },
    }
    try {
      pool.dispatch(
        {
          origin,
          path: `${url.pathname}${url.search}`,
          method: r.method as Dispatcher.HttpMethod,
          headers: { ...r.headers, host: url.host },
          body: r.body ?? null,
        },
        handler,
      )
    } catch (err) {
      // a header or method undici refuses (its own checks)
      failHead(
        new AppError(
          502,
          'outbound.connect_failed',
          `request to ${host} failed: ${err instanceof Error ? err.message : String(err)}`,
          { cause: err },
        ),
      )
    }
  })
}
