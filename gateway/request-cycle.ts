import { randomBytes } from 'node:crypto'
import type { HttpRequest, HttpResponse } from 'uWebSockets.js'
import { toAppError } from '../src/kernel/errors.ts'
import type { Logger } from '../src/kernel/log.ts'
import { httpRequestDuration, type RouteTimer } from '../src/platform/metrics.ts'
import { startSpan, tracing, type TraceSpan } from '../src/platform/tracing.ts'
import type { Cors } from './cors.ts'
import { sendError, type ResponseState } from './http.ts'
import { traceIdOf, type RequestLogFields, type RequestLogSink } from './request-log.ts'

/*
 * The life of one request at the edge: `begin` makes its state and does the synchronous reads
 * uWS requires before any await (its request object dies with the callback), `finish` logs it,
 * `fail` answers the one error body. Every handler of the gateway (forwarded routes, webhooks,
 * local pages) goes through these, so request ids, access logs and the request duration metric
 * look the same everywhere.
 *
 * With tracing on (src/platform/tracing.ts) `begin` also starts the request's span when given the
 * route's template (forwarded routes and webhooks give theirs; the gateway's own pages are not
 * traced), a child of the request's own `traceparent` when it carries a valid one, and `finish`
 * ends it; `traceId` is the trace the request belongs to, for the access log. With tracing off
 * neither is set and an incoming `traceparent` is not read (nor passed on).
 */
export type RequestState = ResponseState & {
  method: string
  url: string
  started: number
  /** The duration histogram's series of the route (agent_platform_http_request_duration_seconds). */
  timer: RouteTimer
  onAbort?: () => void
  /** The request's span (tracing on only). */
  span?: TraceSpan
  /** The request's trace id, 32 hex digits (tracing on only): the one its spans and its log lines share. */
  traceId?: string
  /** Set only when request logging is on; handlers fill in what they learn (route, user). */
  log?: RequestLogFields
}

/** Request logging (ANALYTICS_HOST set): where records go, and the client address it needs. */
export interface RequestLogging {
  sink: RequestLogSink
  clientAddress: (res: HttpResponse, req: HttpRequest) => string
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
  /** `route`: the route's path template (`/chats/{id}/messages`), the span's name with the method; absent: not traced. */
  begin(res: HttpResponse, req: HttpRequest, timer: RouteTimer, route?: string): RequestState
  finish(state: RequestState, status: number): void
  fail(res: HttpResponse, state: RequestState, err: unknown): void
}

/** A client's X-Request-ID is kept when it is short and plain; otherwise `<boot id>-<counter>`. */
const CLIENT_REQUEST_ID = /^[\w.:-]+$/

export function createRequestCycle(cors: Cors, log: Logger, logging?: RequestLogging): RequestCycle {
  const bootId = randomBytes(4).toString('hex')
  let seq = 0
  const sink = logging?.sink
  const finish = (state: RequestState, status: number): void => {
    const span = state.span
    if (span !== undefined) {
      state.span = undefined
      span.setAttribute('http.response.status_code', status)
      if (status >= 500) span.fail(new Error(`HTTP ${String(status)}`))
      span.end()
    }
    const elapsed = performance.now() - state.started
    state.timer.observe(status, elapsed / 1000)
    const ms = Math.round(elapsed * 100) / 100
    if (state.url === '/health') {
      log.debug({ reqId: state.requestId, method: state.method, url: state.url, status, ms }, 'request')
      return
    }
    log.info({ reqId: state.requestId, method: state.method, url: state.url, status, ms }, 'request')
    const f = state.log
    if (sink !== undefined && f !== undefined)
      sink.add({
        method: state.method,
        route: f.route,
        status,
        duration_ms: ms,
        user_id: f.userId,
        namespace: f.namespace,
        bytes_in: f.bytesIn,
        bytes_out: f.bytesOut,
        client_ip: f.clientIp,
        request_id: state.requestId,
        trace_id: f.traceId,
      })
  }
  return {
    begin(res, req, timer, route) {
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
      // only forwarded routes and webhooks are traced: not /health probes, documents, assets, 404s
      if (tracing.on && route !== undefined) traceRequest(state, req, route)
      // one boolean when logging is off; when on, the reads uWS allows only now (the peer address
      // is a getpeername, paid only here: gateway/README.md "Request log"); the trace id is the
      // request's span's when tracing is on, else the client's traceparent's
      if (logging !== undefined)
        state.log = {
          route: '',
          userId: '',
          namespace: '',
          bytesIn: Number(req.getHeader('content-length')) || 0,
          bytesOut: 0,
          clientIp: logging.clientAddress(res, req),
          traceId: state.traceId ?? traceIdOf(req.getHeader('traceparent')),
        }
      res.onAborted(() => {
        state.aborted = true
        state.onAbort?.()
        // a client gone before the answer: its span ends now (`finish` is not called for it)
        if (state.span !== undefined) endAborted(state)
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

/** Starts the request's span: `<METHOD> <route template>`, SERVER, under the request's traceparent when it has one. */
function traceRequest(state: RequestState, req: HttpRequest, route: string): void {
  const parent = req.getHeader('traceparent')
  const span = startSpan(`${state.method} ${route}`, {
    kind: 'server',
    ...(parent === '' ? {} : { parent }),
    attributes: {
      'http.request.method': state.method,
      'url.path': state.url,
      'http.route': route,
      'http.request.id': state.requestId,
    },
  })
  if (span === undefined) return
  state.span = span
  state.traceId = span.traceId
}

function endAborted(state: RequestState): void {
  const span = state.span
  state.span = undefined
  span?.setAttribute('http.client_aborted', true)
  span?.end()
}
