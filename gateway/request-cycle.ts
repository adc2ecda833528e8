import { randomBytes } from 'node:crypto'
import type { HttpRequest, HttpResponse } from 'uWebSockets.js'
import { toAppError } from '../src/kernel/errors.ts'
import type { Logger } from '../src/kernel/log.ts'
import { httpRequestDuration, type RouteTimer } from '../src/platform/metrics.ts'
import type { Cors } from './cors.ts'
import { sendError, type ResponseState } from './http.ts'

/*
 * The life of one request at the edge: `begin` makes its state and does the synchronous reads
 * uWS requires before any await (its request object dies with the callback), `finish` logs it,
 * `fail` answers the one error body. Every handler of the gateway (forwarded routes, webhooks,
 * local pages) goes through these, so request ids, access logs and the request duration metric
 * look the same everywhere.
 */
export type RequestState = ResponseState & {
  method: string
  url: string
  started: number
  /** The duration histogram's series of the route (agent_platform_http_request_duration_seconds). */
  timer: RouteTimer
  onAbort?: () => void
}

/**
 * The `route` label of what the gateway answers itself (a forwarded route's is its id): fixed
 * names, never a URL, so the metric's series stay few.
 */
export type LocalRouteName =
  | 'health'
  | 'metrics'
  | 'openapi'
  | 'docs'
  | 'docs.assets'
  | 'assets'
  | 'webhooks.call'
  | 'preflight'
  | 'unmatched'

/** The timer a handler passes to `begin`: made once per route at start, not per request. */
export const timerOf = (route: string): RouteTimer => httpRequestDuration.route(route)

export const localTimer = (name: LocalRouteName): RouteTimer => timerOf(name)

export interface RequestCycle {
  begin(res: HttpResponse, req: HttpRequest, timer: RouteTimer): RequestState
  finish(state: RequestState, status: number): void
  fail(res: HttpResponse, state: RequestState, err: unknown): void
}

/** A client's X-Request-ID is kept when it is short and plain; otherwise `<boot id>-<counter>`. */
const CLIENT_REQUEST_ID = /^[\w.:-]+$/

export function createRequestCycle(cors: Cors, log: Logger): RequestCycle {
  const bootId = randomBytes(4).toString('hex')
  let seq = 0
  const finish = (state: RequestState, status: number): void => {
    const elapsed = performance.now() - state.started
    state.timer.observe(status, elapsed / 1000)
    const ms = Math.round(elapsed * 100) / 100
    if (state.url === '/health')
      log.debug({ reqId: state.requestId, method: state.method, url: state.url, status, ms }, 'request')
    else log.info({ reqId: state.requestId, method: state.method, url: state.url, status, ms }, 'request')
  }
  return {
    begin(res, req, timer) {
      const given = req.getHeader('x-request-id')
      const url = req.getUrl()
      const state: RequestState = {
        aborted: false,
        done: false,
        requestId:
          given !== '' && given.length <= 128 && CLIENT_REQUEST_ID.test(given)
            ? given
            : `${bootId}-${(++seq).toString(36)}`,
        headers: cors.headersFor(req.getHeader('origin'), url),
        method: req.getCaseSensitiveMethod(),
        url,
        started: performance.now(),
        timer,
      }
      res.onAborted(() => {
        state.aborted = true
        state.onAbort?.()
      })
      return state
    },
    finish,
    fail(res, state, err) {
      const e = toAppError(err)
      if (e.status >= 500 && e.code === 'internal') log.error({ err, reqId: state.requestId }, 'request failed')
      sendError(res, state, e.status, e.toBody(), e.status === 401 ? { 'www-authenticate': 'Bearer' } : undefined)
      finish(state, e.status)
    },
  }
}
