import { randomBytes } from 'node:crypto'
import type { HttpRequest, HttpResponse } from 'uWebSockets.js'
import { toAppError } from '../src/kernel/errors.ts'
import type { Logger } from '../src/kernel/log.ts'
import type { Cors } from './cors.ts'
import { sendError, type ResponseState } from './http.ts'
import { traceIdOf, type RequestLogFields, type RequestLogSink } from './request-log.ts'

/*
 * The life of one request at the edge: `begin` makes its state and does the synchronous reads
 * uWS requires before any await (its request object dies with the callback), `finish` logs it,
 * `fail` answers the one error body. Every handler of the gateway (forwarded routes, webhooks,
 * local pages) goes through these, so request ids and access logs look the same everywhere.
 */
export type RequestState = ResponseState & {
  method: string
  url: string
  started: number
  onAbort?: () => void
  /** Set only when request logging is on; handlers fill in what they learn (route, user). */
  log?: RequestLogFields
}

/** Request logging (ANALYTICS_HOST set): where records go, and the client address it needs. */
export interface RequestLogging {
  sink: RequestLogSink
  clientAddress: (res: HttpResponse, req: HttpRequest) => string
}

export interface RequestCycle {
  begin(res: HttpResponse, req: HttpRequest): RequestState
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
    const ms = Math.round((performance.now() - state.started) * 100) / 100
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
    begin(res, req) {
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
      }
      // one boolean when logging is off; when on, the reads uWS allows only now (the peer address
      // is a getpeername, paid only here: gateway/README.md "Request log")
      if (logging !== undefined)
        state.log = {
          route: '',
          userId: '',
          namespace: '',
          bytesIn: Number(req.getHeader('content-length')) || 0,
          bytesOut: 0,
          clientIp: logging.clientAddress(res, req),
          traceId: traceIdOf(req.getHeader('traceparent')),
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
