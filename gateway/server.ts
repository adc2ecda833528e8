import { randomBytes } from 'node:crypto'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import type { TObject, TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import uws from 'uWebSockets.js'
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js'
import type { NatsConnection } from '@nats-io/transport-node'
import { rpcSubject, type Caller, type RouteDef } from '../src/api/route.ts'
import { decodeReply, encodeRequest } from '../src/api/rpc-wire.ts'
import { AppError, toAppError, type FieldIssue } from '../src/kernel/errors.ts'
import { classifyNatsError } from '../src/kernel/nats-errors.ts'
import { listUnstorable, unstorableReason } from '../src/kernel/storable-text.ts'
import type { Logger } from '../src/kernel/log.ts'
import type { NatsNames } from '../src/platform/nats-names.ts'
import { newChannelId, parseLastId, parseStreamReply } from '../src/streaming/channel.ts'
import { createTokenVerifier } from './auth.ts'
import { createCors } from './cors.ts'
import { DOCS_ASSET_PREFIX, DOCS_INIT_JS, docsPage, loadDocsAssets } from './docs.ts'
import { COMPONENT_ASSET_PREFIX, loadComponentAssets } from './component-assets.ts'
import { readBody, send, sendError, sendPage, type ResponseState } from './http.ts'
import { MAX_JSON_DEPTH, scanJson } from './json-scan.ts'
import { buildOpenApi } from './openapi.ts'
import { SseRelay, type SseSettings, type SseStream } from './sse.ts'
import { healthReport, type HealthComponents } from './health.ts'
import { BlobDownload, BlobUploadPlan } from '../schemas/collection.ts'
import { openBlobStore, type BlobStore } from '../src/platform/blob-store.ts'
import { BodyQueue, MULTIPART_SLACK, receiveUpload, sendBlob, tooLarge } from './blob-transfer.ts'
import { trackNatsLink } from './nats-status.ts'
import { watchWebhooks, webhookHandler } from './webhooks.ts'

/*
 * The HTTP edge on uWebSockets.js. It holds no database connection: it authenticates the bearer
 * token, validates the request against the route's TypeBox schemas and forwards it over NATS
 * request/reply, then copies the reply bytes to the socket.
 */
export interface GatewayOptions {
  nc: NatsConnection
  names: NatsNames
  routes: readonly RouteDef[]
  log: Logger
  secretKey: string
  corsOrigins: string
  maxBodyBytes: number
  rpcTimeoutMs?: number
  version: string
  /** Peers whose X-Forwarded-For is believed (comma-separated addresses). */
  trustedProxies?: string
  /** Server-Sent Events settings (SSE_PING_SECONDS, SSE_MAX_BUFFER_BYTES, SSE_IDLE_TIMEOUT_SECONDS); defaults in gateway/sse.ts. */
  sse?: Partial<SseSettings>
  /** Dependencies /health reports besides NATS (Postgres, workers); see gateway/health.ts. */
  health?: HealthComponents
  /** The object store of streamed uploads and downloads (routes with `blob`); default: the FILES bucket, opened on first use. */
  blobs?: () => Promise<BlobStore>
}

export interface Gateway {
  port: number
  close(): void
  /** Open Server-Sent Events streams (listening, replaying or live). */
  sseStreams(): number
  /** Events relayed and corked writes made for them since start (writes < events when events of a stream arrive together). */
  sseStats(): { events: number; writes: number }
}

type RequestState = ResponseState & { method: string; url: string; started: number; onAbort?: () => void }

interface CompiledRoute {
  def: RouteDef
  paramNames: string[]
  params: TypeCheck<TObject> | undefined
  query: { schema: TObject; check: TypeCheck<TObject>; keys: string[] } | undefined
  body: TypeCheck<TSchema> | undefined
  subject: string
  pattern: RegExp
}

const EMPTY = new Uint8Array(0)
const isJson = (contentType: string): boolean => contentType.toLowerCase().startsWith('application/json')
const checkUploadPlan = TypeCompiler.Compile(BlobUploadPlan)
const checkBlobDownload = TypeCompiler.Compile(BlobDownload)

/** A small JSON reply body of a blob route (a plan or a download), null when it is something else. */
function parseSmall(data: Uint8Array): unknown {
  if (data.length === 0 || data.length > 8192) return null
  try {
    return JSON.parse(Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8'))
  } catch {
    return null
  }
}
const UWS_METHOD = { GET: 'get', POST: 'post', PUT: 'put', PATCH: 'patch', DELETE: 'del' } as const

/** A malformed escape keeps the raw text; the params schema then rejects it with a clear 422. */
function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s)
  } catch {
    return s
  }
}

/** The named cookies of a Cookie header (first occurrence wins; values at most 4 KiB, as browsers keep them). */
function pickCookies(header: string, names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {}
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq < 0) continue
    const name = part.slice(0, eq).trim()
    const value = part.slice(eq + 1).trim()
    if (names.includes(name) && !(name in out) && value.length <= 4096) out[name] = safeDecode(value)
  }
  return out
}

/** Text Postgres cannot store (NUL, lone surrogates) is the client's fault: 400 naming every place. */
const invalidText = (issues: FieldIssue[]): AppError =>
  new AppError(400, 'request.invalid_text', 'text must not contain NUL characters (U+0000) or lone surrogates', { issues })

/** Issues for the string values of a flat record (path or query parameters). */
function textIssues(values: Record<string, unknown>, prefix: string): FieldIssue[] {
  const issues: FieldIssue[] = []
  for (const k in values) {
    const v = values[k]
    const reason = typeof v === 'string' ? unstorableReason(v) : null
    if (reason !== null) issues.push({ path: `${prefix}.${k}`, message: `contains ${reason}` })
  }
  return issues
}

const issuesOf = (check: TypeCheck<TSchema>, value: unknown, prefix: string): FieldIssue[] =>
  [...check.Errors(value)].slice(0, 20).map((e) => ({ path: `${prefix}${e.path.replace(/^\//, '').replace(/\//g, '.')}`, message: e.message }))

function compile(def: RouteDef, names: NatsNames): CompiledRoute {
  const paramNames = [...def.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] as string)
  return {
    def,
    paramNames,
    params: def.params === undefined ? undefined : TypeCompiler.Compile(def.params),
    query: def.query === undefined ? undefined : { schema: def.query, check: TypeCompiler.Compile(def.query), keys: Object.keys(def.query.properties) },
    body: def.body === undefined ? undefined : TypeCompiler.Compile(def.body),
    subject: rpcSubject(names, def.id),
    pattern: new RegExp(`^${def.greedyParam === true ? def.path.replace(/\{[^}]+\}$/, '.+').replace(/\{[^}]+\}/g, '[^/]+') : def.path.replace(/\{[^}]+\}/g, '[^/]+')}$`),
  }
}

/** A stream route's reply body → the channel to relay; null when it is a plain JSON answer. */
function streamTarget(data: Uint8Array): ReturnType<typeof parseStreamReply> {
  if (data.length === 0 || data.length > 4096) return null
  try {
    return parseStreamReply(JSON.parse(Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8')))
  } catch {
    return null
  }
}

export async function startGateway(options: GatewayOptions, host: string, port: number): Promise<Gateway> {
  const { nc, log } = options
  // webhook paths come from the WEBHOOKS bucket (watched) only when webhook routes are served
  const webhooks = options.routes.some((r) => r.webhook === true) ? await watchWebhooks(nc, options.names, log.child({ mod: 'webhooks' })) : undefined
  const verifier = createTokenVerifier(options.secretKey)
  const cors = createCors(options.corsOrigins)
  const rpcTimeoutMs = options.rpcTimeoutMs ?? 30_000
  const bootId = randomBytes(4).toString('hex')
  let seq = 0
  const nextRequestId = () => `${bootId}-${(++seq).toString(36)}`
  const compiled = options.routes.map((r) => compile(r, options.names))
  // An IPv4 client of a dual-stack listener shows up as ::ffff:a.b.c.d; one spelling per client.
  const plainIp = (ip: string) => ip.trim().toLowerCase().replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '')
  const trusted = new Set((options.trustedProxies ?? '').split(',').map(plainIp).filter(Boolean))
  /**
   * The client address for rate limits: the peer, unless the peer is a trusted proxy; then the
   * nearest X-Forwarded-For hop that is not itself a trusted proxy (hops further left are whatever
   * the client chose to send, so they are never believed).
   */
  const clientAddress = (res: HttpResponse, req: HttpRequest): string => {
    const peer = plainIp(Buffer.from(res.getRemoteAddressAsText()).toString())
    if (!trusted.has(peer)) return peer
    const hops = req.getHeader('x-forwarded-for').split(',').map(plainIp).filter(Boolean)
    for (let i = hops.length - 1; i >= 0; i--) if (!trusted.has(hops[i] as string)) return hops[i] as string
    return hops[0] ?? peer
  }
  const app: TemplatedApp = uws.App()
  const sse = new SseRelay(nc, options.names, log, options.sse)
  const blobs = options.blobs ?? (() => openBlobStore(nc, options.names))
  const link = trackNatsLink(nc, log)

  /** Per-request state and the synchronous reads uWS requires before any await. */
  function begin(res: HttpResponse, req: HttpRequest): RequestState {
    const given = req.getHeader('x-request-id')
    const url = req.getUrl()
    const state: RequestState = {
      aborted: false,
      done: false,
      requestId: given !== '' && given.length <= 128 && /^[\w.:-]+$/.test(given) ? given : nextRequestId(),
      headers: cors.headersFor(req.getHeader('origin'), url),
      method: req.getCaseSensitiveMethod(),
      url,
      started: performance.now(),
    }
    res.onAborted(() => {
      state.aborted = true
      state.onAbort?.()
    })
    return state
  }

  function finish(state: ReturnType<typeof begin>, status: number): void {
    const ms = Math.round((performance.now() - state.started) * 100) / 100
    if (state.url === '/health') log.debug({ reqId: state.requestId, method: state.method, url: state.url, status, ms }, 'request')
    else log.info({ reqId: state.requestId, method: state.method, url: state.url, status, ms }, 'request')
  }

  function fail(res: HttpResponse, state: RequestState, err: unknown): void {
    const e = toAppError(err)
    if (e.status >= 500 && e.code === 'internal') log.error({ err, reqId: state.requestId }, 'request failed')
    sendError(res, state, e.status, e.toBody(), e.status === 401 ? { 'www-authenticate': 'Bearer' } : undefined)
    finish(state, e.status)
  }

  // Local routes: health, OpenAPI documents and the docs pages.
  app.get('/health', (res, req) => {
    const state = begin(res, req)
    const report = healthReport(link.state(), options.version, options.health?.())
    send(res, state, report.code, JSON.stringify(report.body))
    finish(state, report.code)
  })
  const docs = [
    { surface: 'runtime' as const, page: '/docs', spec: '/openapi.json' },
    { surface: 'management' as const, page: '/api/v1/docs', spec: '/api/v1/openapi.json' },
    { surface: 'adapter' as const, page: '/adapters/openai/docs', spec: '/adapters/openai/openapi.json' },
  ]
  for (const d of docs) {
    const document = buildOpenApi(options.routes, d.surface, options.version)
    const doc = JSON.stringify(document)
    const title = (document['info'] as { title: string }).title
    app.get(d.spec, (res, req) => {
      const state = begin(res, req)
      send(res, state, 200, doc)
      finish(state, 200)
    })
    const html = docsPage(title, d.spec)
    app.get(d.page, (res, req) => {
      const state = begin(res, req)
      send(res, state, 200, html, 'text/html; charset=utf-8')
      finish(state, 200)
    })
  }
  const assets = loadDocsAssets()
  assets.set('init.js', { body: Buffer.from(DOCS_INIT_JS), type: 'text/javascript; charset=utf-8' })
  app.get(`${DOCS_ASSET_PREFIX}*`, (res, req) => {
    const state = begin(res, req)
    const asset = assets.get(state.url.slice(DOCS_ASSET_PREFIX.length))
    if (asset === undefined) {
      sendError(res, state, 404, { detail: 'no such asset', code: 'route.not_found' })
      finish(state, 404)
      return
    }
    send(res, state, 200, asset.body, asset.type, { 'cache-control': 'public, max-age=3600' })
    finish(state, 200)
  })

  // The libraries of rendered component pages (React, platform-ui) at versioned paths: immutable.
  const componentAssets = loadComponentAssets()
  app.get(`${COMPONENT_ASSET_PREFIX}*`, (res, req) => {
    const state = begin(res, req)
    const asset = componentAssets.get(state.url.slice(COMPONENT_ASSET_PREFIX.length))
    if (asset === undefined) {
      sendError(res, state, 404, { detail: 'no such asset', code: 'route.not_found' })
      finish(state, 404)
      return
    }
    send(res, state, 200, asset.body, asset.type, { 'cache-control': 'public, max-age=31536000, immutable', 'x-content-type-options': 'nosniff', 'cross-origin-resource-policy': 'cross-origin' })
    finish(state, 200)
  })

  // Forwarded routes.
  for (const route of compiled) {
    if (route.def.target !== 'rpc' || route.def.webhook === true) continue
    const greedy = route.def.greedyParam === true
    // a greedy last parameter takes the rest of the URL: `<prefix>*`, read from the URL below
    const uwsPath = greedy ? route.def.path.replace(/\{[^}]+\}$/, '*').replace(/\{([^}]+)\}/g, ':$1') : route.def.path.replace(/\{([^}]+)\}/g, ':$1')
    const greedyPrefix = greedy ? route.def.path.slice(0, route.def.path.lastIndexOf('{')) : ''
    const handler = (res: HttpResponse, req: HttpRequest) => {
      const state = begin(res, req)
      const apiKey = req.getHeader('x-api-key')
      // `X-API-Key: <key>` is the same credential as `Authorization: Bearer <key>` (gateway/auth.ts).
      const authorization = apiKey !== '' ? `Bearer ${apiKey}` : req.getHeader('authorization')
      const clientIp = clientAddress(res, req)
      const contentType = req.getHeader('content-type')
      const params: Record<string, string> = {}
      for (let i = 0; i < route.paramNames.length; i++) {
        const rest = greedy && i === route.paramNames.length - 1
        params[route.paramNames[i] as string] = safeDecode(rest ? state.url.slice(greedyPrefix.length) : (req.getParameter(i) ?? ''))
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
      const cookies = route.def.cookies === undefined ? undefined : pickCookies(req.getHeader('cookie'), route.def.cookies)
      const declared = Number(req.getHeader('content-length') || '0')
      if (route.def.blob === 'upload' && !isJson(contentType)) {
        // a file body streams to the object store (gateway/blob-transfer.ts); nothing is read before the service agrees
        const queue = new BodyQueue(res)
        state.onAbort = () => queue.abort()
        const declaredBytes = req.getHeader('content-length') === '' ? null : declared
        void forwardUpload(res, state, route, { authorization, clientIp, contentType, params, rawQuery, queue, declaredBytes })
        return
      }
      let bodyPromise: Promise<Buffer | null> | undefined
      if (route.body !== undefined) {
        if (declared > options.maxBodyBytes) {
          fail(res, state, new AppError(413, 'request.too_large', `body larger than ${String(options.maxBodyBytes)} bytes`))
          return
        }
        bodyPromise = readBody(res, options.maxBodyBytes)
      }
      void forward(res, state, route, { authorization, clientIp, contentType, params, rawQuery, lastEventId, bodyPromise, headers, cookies })
    }
    app[UWS_METHOD[route.def.method]](uwsPath, handler)
  }

  /** One request/reply to the route's service; fails fast with 503 while NATS is disconnected (gateway/nats-status.ts). */
  async function call(route: CompiledRoute, out: ReturnType<typeof encodeRequest>): Promise<ReturnType<typeof decodeReply>> {
    const msg = await link.guard(() => nc.request(route.subject, out.data, { timeout: rpcTimeoutMs, headers: out.headers })).catch((err: unknown) => {
      if (err instanceof AppError) throw err
      const failure = classifyNatsError(err)
      if (failure === 'no_responders' || failure === 'closed') throw new AppError(503, 'service.unavailable', 'no service is answering this route right now')
      if (failure === 'timeout') throw new AppError(504, 'service.timeout', 'the service did not answer in time')
      throw err
    })
    return decodeReply(msg.headers, msg.data)
  }

  /**
   * A streamed upload (gateway/blob-transfer.ts): `prepare` (may the caller upload here, into
   * which object, how many bytes), the body into the object store, then `commit`. From the commit
   * call on, the object is the service's: it deletes what it refuses, and the sweeper removes an
   * object whose commit never arrived (its reservation expires).
   */
  async function forwardUpload(
    res: HttpResponse,
    state: RequestState,
    route: CompiledRoute,
    input: { authorization: string; clientIp: string; contentType: string; params: Record<string, string>; rawQuery: string; queue: BodyQueue; declaredBytes: number | null },
  ): Promise<void> {
    // set between a plan and its commit: what to tell the service when the transfer fails
    let abandon: (() => void) | null = null
    try {
      const { caller, query } = await prelude(route, input)
      const meta = { requestId: state.requestId, caller, params: input.params, query, clientIp: input.clientIp }
      const planned = await call(route, encodeRequest({ ...meta, blob: { phase: 'prepare', declaredBytes: input.declaredBytes, contentType: input.contentType } }, EMPTY))
      if (planned.status !== 200) {
        input.queue.discard()
        send(res, state, planned.status, planned.data, 'application/json', planned.headers)
        finish(state, planned.status)
        return
      }
      const plan = parseSmall(planned.data)
      if (!checkUploadPlan.Check(plan)) throw new AppError(500, 'internal', 'the service answered no upload plan')
      abandon = () => void call(route, encodeRequest({ ...meta, blob: { phase: 'abort', object: plan.object } }, EMPTY)).catch((err: unknown) => log.warn({ err, object: plan.object }, 'could not abandon an upload; its reservation expires'))
      const multipart = input.contentType.toLowerCase().startsWith('multipart/form-data')
      // a declared length over the plan is refused before a byte is read
      if (input.declaredBytes !== null && input.declaredBytes > plan.max_bytes + (multipart ? MULTIPART_SLACK : 0)) throw tooLarge(plan.max_bytes)
      const got = await receiveUpload(input.queue, await blobs(), plan.object, plan.max_bytes, input.contentType)
      if (state.aborted) {
        abandon()
        return
      }
      abandon = null
      const committed = await call(
        route,
        encodeRequest({ ...meta, blob: { phase: 'commit', object: plan.object, size: got.info.size, sha256: got.info.sha256, filename: got.filename, contentType: got.contentType, fields: got.fields } }, EMPTY),
      )
      send(res, state, committed.status, committed.data, 'application/json', committed.headers)
      finish(state, committed.status)
    } catch (err) {
      input.queue.discard()
      abandon?.()
      fail(res, state, err)
    }
  }

  /** Authentication, then path and query checks, as for every forwarded route. */
  async function prelude(route: CompiledRoute, input: { authorization: string; params: Record<string, string>; rawQuery: string; headers?: Record<string, string> | undefined }): Promise<{ caller: Caller | null; query: Record<string, unknown> }> {
    let caller: Caller | null = null
    if (route.def.auth) {
      if (input.authorization === '') throw new AppError(401, 'auth.unauthorized', 'authentication required')
      caller = await verifier.verify(input.authorization)
    }
    const paramIssues = textIssues(input.params, 'path')
    if (paramIssues.length > 0) throw invalidText(paramIssues)
    if (input.headers !== undefined) {
      const headerIssues = textIssues(input.headers, 'header')
      if (headerIssues.length > 0) throw invalidText(headerIssues)
    }
    if (route.params !== undefined && !route.params.Check(input.params)) {
      throw new AppError(422, 'request.invalid', 'invalid path parameters', { issues: issuesOf(route.params, input.params, '') })
    }
    let query: Record<string, unknown> = {}
    if (route.query !== undefined && input.rawQuery !== '') {
      const picked: Record<string, unknown> = {}
      const search = new URLSearchParams(input.rawQuery)
      for (const key of route.query.keys) {
        const v = search.get(key)
        if (v !== null) picked[key] = v
      }
      const queryIssues = textIssues(picked, 'query')
      if (queryIssues.length > 0) throw invalidText(queryIssues)
      query = Value.Convert(route.query.schema, picked) as Record<string, unknown>
      if (!route.query.check.Check(query)) throw new AppError(422, 'request.invalid', 'invalid query parameters', { issues: issuesOf(route.query.check, query, '') })
    }
    return { caller, query }
  }

  async function forward(
    res: HttpResponse,
    state: ReturnType<typeof begin>,
    route: CompiledRoute,
    input: { authorization: string; clientIp: string; contentType: string; params: Record<string, string>; rawQuery: string; lastEventId: string; bodyPromise: Promise<Buffer | null> | undefined; headers: Record<string, string> | undefined; cookies: Record<string, string> | undefined },
  ): Promise<void> {
    let stream: SseStream | undefined
    try {
      const { caller, query } = await prelude(route, input)
      let body: Uint8Array = EMPTY
      if (route.body !== undefined && input.bodyPromise !== undefined) {
        const raw = await input.bodyPromise
        if (raw === null) throw new AppError(413, 'request.too_large', `body larger than ${String(options.maxBodyBytes)} bytes`)
        if (!input.contentType.toLowerCase().startsWith('application/json')) throw new AppError(415, 'request.unsupported_media_type', 'send the body as application/json')
        // one byte pass before parsing: nesting depth, and `\u` escapes of text Postgres rejects
        const scan = scanJson(raw)
        if (scan === 'too_deep') throw new AppError(400, 'request.too_deep', `the body is nested deeper than ${String(MAX_JSON_DEPTH)} levels`)
        let parsed: unknown
        try {
          parsed = JSON.parse(raw.toString('utf8'))
        } catch {
          throw new AppError(400, 'request.malformed_json', 'the body is not valid JSON')
        }
        if (scan === 'unstorable') {
          const found = listUnstorable(parsed, 'body')
          if (found.length > 0) throw invalidText(found.map((at) => ({ path: at.path, message: `contains ${at.reason}` })))
        }
        if (!route.body.Check(parsed)) throw new AppError(422, 'request.invalid', 'the body does not match the schema', { issues: issuesOf(route.body, parsed, '') })
        body = raw
      }
      if (state.aborted) return
      // Stream routes: listen on a fresh channel before forwarding, so no early event is missed.
      let streamLastId: number | undefined
      if (route.def.stream !== undefined) {
        const fromHeader = parseLastId(input.lastEventId.trim())
        const fromQuery = parseLastId(input.rawQuery === '' ? '' : (new URLSearchParams(input.rawQuery).get('last_id') ?? ''))
        const lastId = fromHeader !== undefined ? fromHeader : fromQuery
        if (lastId === null) throw new AppError(422, 'request.invalid', 'Last-Event-ID / last_id must be an event id (a non-negative integer)')
        streamLastId = lastId
        stream = sse.open(newChannelId())
      }
      const out = encodeRequest(
        { requestId: state.requestId, caller, params: input.params, query, clientIp: input.clientIp, ...(input.headers === undefined ? {} : { headers: input.headers }), ...(stream === undefined ? {} : { streamChannelId: stream.channelId }), ...(streamLastId === undefined ? {} : { streamLastId }), ...(input.cookies === undefined ? {} : { cookies: input.cookies }) },
        body,
      )
      const reply = await call(route, out)
      if (stream !== undefined && route.def.stream !== undefined) {
        const target = reply.status === 200 ? streamTarget(reply.data) : null
        if (target !== null) {
          stream.start(res, state, target, route.def.stream.format, reply.headers)
          finish(state, 200)
          return
        }
        stream.cancel()
      }
      if (route.def.html === true && reply.status === 200) {
        sendPage(res, state, reply.data, reply.headers)
        finish(state, 200)
        return
      }
      if (route.def.blob === 'download' && reply.status === 200) {
        const target = parseSmall(reply.data)
        if (checkBlobDownload.Check(target)) {
          await sendBlob(res, state, await blobs(), target.blob, reply.headers)
          finish(state, 200)
          return
        }
      }
      send(res, state, reply.status, reply.data, 'application/json', reply.headers)
      finish(state, reply.status)
    } catch (err) {
      stream?.cancel()
      fail(res, state, err)
    }
  }

  if (webhooks !== undefined) {
    app.any('/webhooks/*', webhookHandler({ nc, names: options.names, table: webhooks, verifier, link, maxBodyBytes: options.maxBodyBytes, rpcTimeoutMs, begin, fail, finish, clientAddress }))
  }

  app.options('/*', (res, req) => {
    const state = begin(res, req)
    state.headers = cors.preflight(req.getHeader('origin'), state.url)
    send(res, state, 204, '')
    finish(state, 204)
  })
  app.any('/*', (res, req) => {
    const state = begin(res, req)
    const allowed = compiled.filter((r) => r.pattern.test(state.url)).map((r) => r.def.method)
    if (allowed.length > 0) {
      sendError(res, state, 405, { detail: `${state.method} is not allowed here`, code: 'route.method_not_allowed' }, { allow: [...new Set(allowed)].join(', ') })
      finish(state, 405)
      return
    }
    sendError(res, state, 404, { detail: `no route ${state.method} ${state.url}`, code: 'route.not_found' })
    finish(state, 404)
  })

  return new Promise((resolve, reject) => {
    app.listen(host, port, (socket: us_listen_socket | false) => {
      if (socket === false) {
        reject(new Error(`cannot listen on ${host}:${String(port)}`))
        return
      }
      const actual = uws.us_socket_local_port(socket as unknown as Parameters<typeof uws.us_socket_local_port>[0])
      log.info({ host, port: actual }, 'gateway listening')
      resolve({
        port: actual,
        close: () => {
          webhooks?.stop()
          uws.us_listen_socket_close(socket)
          sse.close()
        },
        sseStreams: () => sse.streams.size,
        sseStats: () => ({ events: sse.events, writes: sse.batch.writes }),
      })
    })
  })
}
