import { headers as natsHeaders, type MsgHdrs } from '@nats-io/transport-node'
import type { Caller } from '../auth/caller.ts'
import { JsonBytes } from './bind.ts'
import type { BlobPhase, RpcReply, RpcRequest } from './route.ts'

/*
 * The gateway ⇄ service wire. Request and reply bodies travel as the raw JSON bytes in the NATS
 * message data; everything else rides in NATS headers. So the gateway never re-serialises a reply
 * body: it copies the bytes it got to the socket.
 */
const H_REQUEST_ID = 'Request-Id'
const H_CALLER = 'Caller'
const H_PARAMS = 'Params'
const H_QUERY = 'Query'
const H_CLIENT_IP = 'Client-Ip'
const H_STATUS = 'Status'
const H_HEADERS = 'Reply-Headers'
const H_STREAM_CHANNEL = 'Stream-Channel'
const H_STREAM_LAST_ID = 'Stream-Last-Id'
const H_FORWARDED = 'Forwarded-Headers'
const H_COOKIES = 'Cookies'
const H_BLOB = 'Blob'
/** W3C trace context, under its own name (src/platform/tracing.ts): set only when the gateway traces. */
const H_TRACEPARENT = 'traceparent'
const H_USER_ID = 'User-Id'

const encoder = new TextEncoder()
const decoder = new TextDecoder()

export interface EncodedRequest {
  headers: MsgHdrs
  data: Uint8Array
}

/** What the gateway sends with a request besides its body. */
export interface RequestMeta {
  requestId: string
  caller: Caller | null
  params: Record<string, string>
  query: Record<string, unknown>
  clientIp?: string
  streamChannelId?: string
  streamLastId?: number
  headers?: Record<string, string>
  cookies?: Record<string, string>
  blob?: BlobPhase
  /** The gateway's request span (tracing on only): the service's span is its child. */
  traceparent?: string
}

export function encodeRequest(req: RequestMeta, body: Uint8Array): EncodedRequest {
  const h = natsHeaders()
  h.set(H_REQUEST_ID, req.requestId)
  if (req.clientIp !== undefined && req.clientIp !== '') h.set(H_CLIENT_IP, req.clientIp)
  if (req.caller !== null) h.set(H_CALLER, JSON.stringify(req.caller))
  if (Object.keys(req.params).length > 0) h.set(H_PARAMS, JSON.stringify(req.params))
  if (Object.keys(req.query).length > 0) h.set(H_QUERY, JSON.stringify(req.query))
  if (req.streamChannelId !== undefined) h.set(H_STREAM_CHANNEL, req.streamChannelId)
  if (req.streamLastId !== undefined) h.set(H_STREAM_LAST_ID, String(req.streamLastId))
  if (req.headers !== undefined && Object.keys(req.headers).length > 0) h.set(H_FORWARDED, JSON.stringify(req.headers))
  if (req.cookies !== undefined && Object.keys(req.cookies).length > 0) h.set(H_COOKIES, JSON.stringify(req.cookies))
  if (req.blob !== undefined) h.set(H_BLOB, JSON.stringify(req.blob))
  if (req.traceparent !== undefined) h.set(H_TRACEPARENT, req.traceparent)
  return { headers: h, data: body }
}

export function decodeRequest(h: MsgHdrs | undefined, data: Uint8Array): RpcRequest {
  const get = (k: string) => h?.get(k) ?? ''
  const json = (k: string, fallback: unknown) => {
    const v = get(k)
    return v === '' ? fallback : JSON.parse(v)
  }
  const req: RpcRequest = {
    requestId: get(H_REQUEST_ID),
    caller: json(H_CALLER, null) as Caller | null,
    params: json(H_PARAMS, {}) as Record<string, string>,
    query: json(H_QUERY, {}) as Record<string, unknown>,
    body: data.length === 0 ? undefined : JSON.parse(decoder.decode(data)),
    clientIp: get(H_CLIENT_IP),
  }
  const channel = get(H_STREAM_CHANNEL)
  if (channel !== '') req.streamChannelId = channel
  const lastId = get(H_STREAM_LAST_ID)
  if (lastId !== '') req.streamLastId = Number(lastId)
  const forwarded = get(H_FORWARDED)
  if (forwarded !== '') req.headers = JSON.parse(forwarded) as Record<string, string>
  const cookies = json(H_COOKIES, null) as Record<string, string> | null
  if (cookies !== null) req.cookies = cookies
  const blob = get(H_BLOB)
  if (blob !== '') req.blob = JSON.parse(blob) as BlobPhase
  const traceparent = get(H_TRACEPARENT)
  if (traceparent !== '') req.traceparent = traceparent
  return req
}

export interface DecodedReply {
  status: number
  headers: Record<string, string>
  /** The JSON bytes to send as they are. */
  data: Uint8Array
  /** RpcReply.userId: for the request log only. */
  userId?: string
}

const EMPTY = new Uint8Array(0)
const NO_HEADERS: Record<string, string> = Object.freeze({}) as Record<string, string>

/**
 * A handler's reply as the gateway sends it: the status, the extra headers, the body's bytes.
 * `page`: a page route's reply (RouteDef.html), whose 200 body goes as the page's UTF-8 bytes.
 */
export function renderReply(reply: RpcReply, page = false): DecodedReply {
  if (page && reply.status === 200 && reply.error === undefined) {
    const body = reply.body
    if (typeof body !== 'string' && !(body instanceof Uint8Array))
      return renderReply({ status: 500, error: { status: 500, detail: 'internal error', code: 'internal' } })
    return {
      status: 200,
      headers: reply.headers ?? NO_HEADERS,
      data: typeof body === 'string' ? encoder.encode(body) : body,
      ...(reply.userId === undefined ? {} : { userId: reply.userId }),
    }
  }
  const payload =
    reply.error !== undefined
      ? {
          detail: reply.error.detail,
          code: reply.error.code,
          ...(reply.error.errors === undefined ? {} : { errors: reply.error.errors }),
        }
      : reply.body
  return {
    status: reply.status,
    headers: reply.headers ?? NO_HEADERS,
    data:
      payload === undefined
        ? EMPTY
        : payload instanceof JsonBytes
          ? payload.bytes
          : encoder.encode(JSON.stringify(payload)),
    ...(reply.userId === undefined ? {} : { userId: reply.userId }),
  }
}

/** The reply as a NATS message: the body as data, status and headers in NATS headers. */
export function encodeReply(reply: RpcReply, page = false): EncodedRequest {
  const r = renderReply(reply, page)
  const h = natsHeaders()
  h.set(H_STATUS, String(r.status))
  if (r.headers !== NO_HEADERS) h.set(H_HEADERS, JSON.stringify(r.headers))
  if (r.userId !== undefined) h.set(H_USER_ID, r.userId)
  return { headers: h, data: r.data }
}

export function decodeReply(h: MsgHdrs | undefined, data: Uint8Array): DecodedReply {
  const status = Number(h?.get(H_STATUS) ?? '500')
  const extra = h?.get(H_HEADERS) ?? ''
  const userId = h?.get(H_USER_ID) ?? ''
  return {
    status: Number.isInteger(status) ? status : 500,
    headers: extra === '' ? {} : (JSON.parse(extra) as Record<string, string>),
    data,
    ...(userId === '' ? {} : { userId }),
  }
}
