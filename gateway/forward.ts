import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { HttpRequest, HttpResponse } from 'uWebSockets.js'
import type { NatsConnection } from '@nats-io/transport-node'
import type { DecodedReply, RequestMeta } from '../src/api/rpc-wire.ts'
import { AppError } from '../src/kernel/errors.ts'
import type { Logger } from '../src/kernel/log.ts'
import type { BlobStore } from '../src/platform/blob-store.ts'
import { newChannelId, parseLastId, parseStreamReply } from '../src/streaming/channel.ts'
import { BlobDownload, BlobUploadPlan } from '../schemas/collection.ts'
import type { TokenVerifier } from './auth.ts'
import { BodyQueue, MULTIPART_SLACK, receiveUpload, sendBlob, tooLarge } from './blob-transfer.ts'
import { pickCookies, safeDecode, type CompiledRoute } from './compiled-route.ts'
import { readBody, send, sendPage } from './http.ts'
import type { NatsLink } from './nats-status.ts'
import { checkJsonBody, checkPrelude } from './request-checks.ts'
import { timerOf, type RequestCycle, type RequestState } from './request-cycle.ts'
import { RouteCaller } from './route-call.ts'
import type { SseRelay, SseStream } from './sse.ts'

/*
 * A forwarded route: the uWS handler reads what it needs from the request synchronously, then the
 * request goes to the route's service over NATS request/reply and the reply's bytes go to the
 * socket — as JSON, as an HTML page, as a relayed SSE stream, or as a blob streamed from the object
 * store. Uploads of file bodies stream into the object store between a `prepare` and a `commit`.
 */
export interface ForwarderDeps {
  nc: NatsConnection
  link: NatsLink
  log: Logger
  cycle: RequestCycle
  verifier: TokenVerifier
  sse: SseRelay
  blobs: () => Promise<BlobStore>
  clientAddress: (res: HttpResponse, req: HttpRequest) => string
  maxBodyBytes: number
  rpcTimeoutMs: number
  /** The API's public base URL (PUBLIC_BASE_URL, else https://DOMAIN; '' = the request's Host): JSON-RPC routes' 401 challenge names it. */
  publicBaseUrl: string
}

interface RequestInput {
  authorization: string
  clientIp: string
  contentType: string
  params: Record<string, string>
  rawQuery: string
}

interface ForwardInput extends RequestInput {
  lastEventId: string
  bodyPromise: Promise<Buffer | null> | undefined
  headers: Record<string, string> | undefined
  cookies: Record<string, string> | undefined
  /** JSON-RPC routes only: the Host header, for the 401 challenge when no public base URL is set. */
  host: string
}

interface UploadInput extends RequestInput {
  queue: BodyQueue
  declaredBytes: number | null
}

const EMPTY = new Uint8Array(0)
const isJson = (contentType: string): boolean => contentType.toLowerCase().startsWith('application/json')
const checkUploadPlan = TypeCompiler.Compile(BlobUploadPlan)
const checkBlobDownload = TypeCompiler.Compile(BlobDownload)

/** Whether a stream route streams this request: always, or only when the body's `flag` field is `true` / its `path` holds a value. */
function streamsOn(stream: NonNullable<CompiledRoute['def']['stream']>, body: unknown): boolean {
  const { bodyFlag, bodyPath } = stream
  if (bodyFlag !== undefined)
    return typeof body === 'object' && body !== null && (body as Record<string, unknown>)[bodyFlag] === true
  if (bodyPath === undefined) return true
  let at: unknown = body
  for (const key of bodyPath) {
    if (typeof at !== 'object' || at === null || Array.isArray(at)) return false
    at = (at as Record<string, unknown>)[key]
  }
  return at !== undefined && at !== null
}

/** The body checks' refusals a JSON-RPC route answers in its own shape with their own status (413, 415, 400). */
const BODY_REFUSALS: ReadonlySet<string> = new Set([
  'request.too_large',
  'request.unsupported_media_type',
  'request.too_deep',
])

const jsonRpcError = (code: number, message: string): Uint8Array =>
  Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } }))

/** A small JSON reply body (at most `max` bytes) parsed; null when it is something else. */
function parseSmall(data: Uint8Array, max: number): unknown {
  if (data.length === 0 || data.length > max) return null
  try {
    return JSON.parse(Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8'))
  } catch {
    return null
  }
}

export class Forwarder {
  private readonly d: ForwarderDeps
  private readonly caller: RouteCaller

  constructor(deps: ForwarderDeps) {
    this.d = deps
    this.caller = new RouteCaller(deps)
  }

  /** The uWS handler of one route: everything read from `req` here, before the first await. */
  handler(route: CompiledRoute): (res: HttpResponse, req: HttpRequest) => void {
    const greedy = route.def.greedyParam === true
    const timer = timerOf(route.def.id)
    return (res, req) => {
      const state = this.d.cycle.begin(res, req, timer, route.def.path)
      const apiKey = req.getHeader('x-api-key')
      // `X-API-Key: <key>` is the same credential as `Authorization: Bearer <key>` (gateway/auth.ts).
      const authorization = apiKey !== '' ? `Bearer ${apiKey}` : req.getHeader('authorization')
      // only routes that use it pay for the peer address (a getpeername per call), read once
      const clientIp = route.def.clientIp === true ? (state.log?.clientIp ?? this.d.clientAddress(res, req)) : ''
      const contentType = req.getHeader('content-type')
      const params: Record<string, string> = {}
      for (let i = 0; i < route.paramNames.length; i++) {
        const rest = greedy && i === route.paramNames.length - 1
        params[route.paramNames[i] as string] = safeDecode(
          rest ? state.url.slice(route.greedyPrefix.length) : (req.getParameter(i) ?? ''),
        )
      }
      if (state.log !== undefined) {
        state.log.route = route.def.path
        state.log.namespace = params['namespace'] ?? ''
      }
      const rawQuery = req.getQuery() ?? ''
      const lastEventId = route.def.stream === undefined ? '' : req.getHeader('last-event-id')
      // only the headers the route declared (RouteDef.headers), read now: uWS's req dies with this callback
      let headers: Record<string, string> | undefined
      for (const name of route.def.headers ?? []) {
        const v = req.getHeader(name)
        if (v !== '') (headers ??= {})[name] = v
      }
      // only the cookies the route names leave the edge (uWS headers are readable only now)
      const cookies =
        route.def.cookies === undefined ? undefined : pickCookies(req.getHeader('cookie'), route.def.cookies)
      const declared = Number(req.getHeader('content-length') || '0')
      if (route.def.blob === 'upload' && !isJson(contentType)) {
        // a file body streams to the object store (gateway/blob-transfer.ts); nothing is read before the service agrees
        const declaredBytes = req.getHeader('content-length') === '' ? null : declared
        const queue = new BodyQueue(res, declaredBytes)
        state.onAbort = () => queue.abort()
        void this.forwardUpload(res, state, route, {
          authorization,
          clientIp,
          contentType,
          params,
          rawQuery,
          queue,
          declaredBytes,
        })
        return
      }
      let bodyPromise: Promise<Buffer | null> | undefined
      if (route.body !== undefined) {
        if (declared > route.maxBodyBytes) {
          const err = new AppError(413, 'request.too_large', `body larger than ${String(route.maxBodyBytes)} bytes`)
          if (route.def.jsonRpc !== true || !this.failJsonRpc(res, state, err, '')) this.d.cycle.fail(res, state, err)
          return
        }
        bodyPromise = readBody(res, route.maxBodyBytes)
      }
      void this.forward(res, state, route, {
        authorization,
        clientIp,
        contentType,
        params,
        rawQuery,
        lastEventId,
        bodyPromise,
        headers,
        cookies,
        host: route.def.jsonRpc === true ? req.getHeader('host') : '',
      })
    }
  }

  /** One request/reply to the route's service (gateway/route-call.ts). */
  call(route: CompiledRoute, meta: RequestMeta, body: Uint8Array): Promise<DecodedReply> {
    return this.caller.call(route.subject, meta, body)
  }

  async forward(res: HttpResponse, state: RequestState, route: CompiledRoute, input: ForwardInput): Promise<void> {
    const { cycle } = this.d
    let stream: SseStream | undefined
    try {
      const { caller, query } = await checkPrelude(route, input, this.d.verifier)
      if (state.log !== undefined && caller !== null) state.log.userId = caller.sub
      let body: Uint8Array = EMPTY
      let value: unknown
      if (route.body !== undefined && input.bodyPromise !== undefined)
        ({ bytes: body, value } = checkJsonBody(
          route.body,
          await input.bodyPromise,
          input.contentType,
          route.maxBodyBytes,
        ))
      if (state.aborted) return
      // Stream routes: listen on a fresh channel before forwarding, so no early event is missed.
      let streamLastId: number | undefined
      if (route.def.stream !== undefined && streamsOn(route.def.stream, value)) {
        const fromHeader = parseLastId(input.lastEventId.trim())
        const fromQuery = parseLastId(
          input.rawQuery === '' ? '' : (new URLSearchParams(input.rawQuery).get('last_id') ?? ''),
        )
        const lastId = fromHeader !== undefined ? fromHeader : fromQuery
        if (lastId === null)
          throw new AppError(
            422,
            'request.invalid',
            'Last-Event-ID / last_id must be an event id (a non-negative integer)',
          )
        streamLastId = lastId
        stream = this.d.sse.open(newChannelId())
      }
      const reply = await this.call(
        route,
        {
          requestId: state.requestId,
          caller,
          params: input.params,
          query,
          clientIp: input.clientIp,
          ...(input.headers === undefined ? {} : { headers: input.headers }),
          ...(stream === undefined ? {} : { streamChannelId: stream.channelId }),
          ...(streamLastId === undefined ? {} : { streamLastId }),
          ...(input.cookies === undefined ? {} : { cookies: input.cookies }),
          ...(state.span === undefined ? {} : { traceparent: state.span.traceparent }),
        },
        body,
      )
      // an API key's owner is known only to the service, which names it in the reply
      if (state.log !== undefined && reply.userId !== undefined) state.log.userId = reply.userId
      if (stream !== undefined && route.def.stream !== undefined) {
        const target = reply.status === 200 ? parseStreamReply(parseSmall(reply.data, 4096)) : null
        if (target !== null) {
          stream.start(res, state, target, route.def.stream.format, reply.headers)
          cycle.finish(state, 200)
          return
        }
        stream.cancel()
      }
      if (route.def.html === true && reply.status === 200) {
        sendPage(res, state, reply.data, reply.headers, route.def.contentType)
        cycle.finish(state, 200)
        return
      }
      if (route.def.blob === 'download' && reply.status === 200) {
        const target = parseSmall(reply.data, 8192)
        if (checkBlobDownload.Check(target)) {
          if (state.log !== undefined) state.log.bytesOut = target.blob.size
          await sendBlob(res, state, await this.d.blobs(), target.blob, reply.headers)
          cycle.finish(state, 200)
          return
        }
      }
      send(res, state, reply.status, reply.data, 'application/json', reply.headers)
      cycle.finish(state, reply.status)
    } catch (err) {
      stream?.cancel()
      if (route.def.jsonRpc === true && this.failJsonRpc(res, state, err, input.host)) return
      cycle.fail(res, state, err)
    }
  }

  /**
   * A JSON-RPC route's refusals in its own shape (RouteDef.jsonRpc): not JSON → -32700, off the
   * schema → -32600, both HTTP 400 with no id (the request's id is unknown); a body too large,
   * not JSON by its content type or nested too deep → -32600 with its own status (413, 415, 400);
   * a 401 with the protected resource metadata's address. Other errors (429, 5xx) stay the platform's.
   */
  private failJsonRpc(res: HttpResponse, state: RequestState, err: unknown, host: string): boolean {
    if (!(err instanceof AppError)) return false
    const data =
      err.code === 'request.malformed_json'
        ? jsonRpcError(-32700, 'Parse error: the body is not valid JSON')
        : err.code === 'request.invalid' && err.status === 422
          ? jsonRpcError(-32600, `Invalid Request: ${err.message}`)
          : BODY_REFUSALS.has(err.code)
            ? jsonRpcError(-32600, `Invalid Request: ${err.message} (${err.code})`)
            : null
    if (data !== null) {
      const status = BODY_REFUSALS.has(err.code) ? err.status : 400
      send(res, state, status, data, 'application/json')
      this.d.cycle.finish(state, status)
      return true
    }
    if (err.status !== 401) return false
    const base = this.d.publicBaseUrl !== '' ? this.d.publicBaseUrl : host === '' ? '' : `http://${host}`
    send(res, state, 401, Buffer.from(JSON.stringify(err.toBody())), 'application/json', {
      'www-authenticate': `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource"`,
    })
    this.d.cycle.finish(state, 401)
    return true
  }

  /**
   * A streamed upload (gateway/blob-transfer.ts): `prepare` (may the caller upload here, into
   * which object, how many bytes), the body into the object store, then `commit`. From the commit
   * call on, the object is the service's: it deletes what it refuses, and the sweeper removes an
   * object whose commit never arrived (its reservation expires).
   */
  async forwardUpload(res: HttpResponse, state: RequestState, route: CompiledRoute, input: UploadInput): Promise<void> {
    const { cycle, log } = this.d
    // set between a plan and its commit: what to tell the service when the transfer fails
    let abandon: (() => void) | null = null
    try {
      const { caller, query } = await checkPrelude(route, input, this.d.verifier)
      if (state.log !== undefined && caller !== null) state.log.userId = caller.sub
      const meta = {
        requestId: state.requestId,
        caller,
        params: input.params,
        query,
        clientIp: input.clientIp,
        ...(state.span === undefined ? {} : { traceparent: state.span.traceparent }),
      }
      const planned = await this.call(
        route,
        { ...meta, blob: { phase: 'prepare', declaredBytes: input.declaredBytes, contentType: input.contentType } },
        EMPTY,
      )
      if (planned.status !== 200) {
        input.queue.discard()
        send(res, state, planned.status, planned.data, 'application/json', planned.headers)
        cycle.finish(state, planned.status)
        return
      }
      const plan = parseSmall(planned.data, 8192)
      if (!checkUploadPlan.Check(plan)) throw new AppError(500, 'internal', 'the service answered no upload plan')
      abandon = () =>
        void this.call(route, { ...meta, blob: { phase: 'abort', object: plan.object } }, EMPTY).catch((err: unknown) =>
          log.warn({ err, object: plan.object }, 'could not abandon an upload; its reservation expires'),
        )
      const multipart = input.contentType.toLowerCase().startsWith('multipart/form-data')
      // a declared length over the plan is refused before a byte is read
      if (input.declaredBytes !== null && input.declaredBytes > plan.max_bytes + (multipart ? MULTIPART_SLACK : 0))
        throw tooLarge(plan.max_bytes)
      const got = await receiveUpload(input.queue, await this.d.blobs(), plan.object, plan.max_bytes, input.contentType)
      if (state.aborted) {
        abandon()
        return
      }
      abandon = null
      if (state.log !== undefined) state.log.bytesIn = got.info.size
      const committed = await this.call(
        route,
        {
          ...meta,
          blob: {
            phase: 'commit',
            object: plan.object,
            size: got.info.size,
            sha256: got.info.sha256,
            filename: got.filename,
            contentType: got.contentType,
            fields: got.fields,
          },
        },
        EMPTY,
      )
      if (state.log !== undefined && committed.userId !== undefined) state.log.userId = committed.userId
      send(res, state, committed.status, committed.data, 'application/json', committed.headers)
      cycle.finish(state, committed.status)
    } catch (err) {
      input.queue.discard()
      abandon?.()
      cycle.fail(res, state, err)
    }
  }
}
