import type { HttpResponse } from 'uWebSockets.js'
import type { ErrorBody } from '../src/kernel/errors.ts'

/*
 * Writing responses on uWS: every write after the synchronous part of a handler must be corked,
 * and nothing may be written after the client went away (onAborted).
 */
export interface ResponseState {
  aborted: boolean
  done: boolean
  requestId: string
  /** CORS and other headers decided before the body is known. */
  headers: [string, string][]
  /** Only while request logging is on (gateway/request-log.ts): `send` notes the body's size. */
  log?: { bytesOut: number }
}

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  204: 'No Content',
  302: 'Found',
  303: 'See Other',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  410: 'Gone',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Entity',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
}

const statusLine = (status: number): string => `${String(status)} ${STATUS_TEXT[status] ?? 'Status'}`

export function send(
  res: HttpResponse,
  state: ResponseState,
  status: number,
  body: Uint8Array | string,
  contentType = 'application/json',
  extra?: Record<string, string>,
): void {
  if (state.aborted || state.done) return
  state.done = true
  if (state.log !== undefined) state.log.bytesOut = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength
  res.cork(() => {
    res.writeStatus(statusLine(status))
    res.writeHeader('x-request-id', state.requestId)
    for (const [k, v] of state.headers) res.writeHeader(k, v)
    if (extra !== undefined) for (const k in extra) res.writeHeader(k, extra[k] as string)
    if (status === 204) {
      res.endWithoutBody()
      return
    }
    res.writeHeader('content-type', contentType)
    res.end(body)
  })
}

export function sendError(
  res: HttpResponse,
  state: ResponseState,
  status: number,
  error: ErrorBody,
  extra?: Record<string, string>,
): void {
  send(res, state, status, JSON.stringify(error), 'application/json', extra)
}

/**
 * Reads the request body up to `limit` bytes. Chunks are copied: uWS reuses the ArrayBuffer after
 * the callback returns. Resolves null when the body is too large (the caller answers 413).
 */
export function readBody(res: HttpResponse, limit: number): Promise<Buffer | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    let size = 0
    let over = false
    res.onData((chunk, isLast) => {
      if (!over) {
        size += chunk.byteLength
        if (size > limit) {
          over = true
          chunks.length = 0
        } else {
          chunks.push(Buffer.from(new Uint8Array(chunk)))
        }
      }
      if (isLast) resolve(over ? null : chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks))
    })
  })
}

/** A page route's 200 (`RouteDef.html`): the reply's data is the page's UTF-8 bytes, sent as they are. */
export function sendPage(
  res: HttpResponse,
  state: ResponseState,
  data: Uint8Array,
  headers: Record<string, string>,
  contentType = 'text/html; charset=utf-8',
): void {
  send(res, state, 200, Buffer.from(data.buffer, data.byteOffset, data.byteLength), contentType, headers)
}
