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
import { readBody, send, sendError, type ResponseState } from './http.ts'
import { MAX_JSON_DEPTH, scanJson } from './json-scan.ts'
import { buildOpenApi } from './openapi.ts'
import { SseRelay, type SseSettings, type SseStream } from './sse.ts'
import { healthReport, type HealthComponents } from './health.ts'
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
}

export interface Gateway {
  port: number
  close(): void
  /** Open Server-Sent Events streams (listening, replaying or live). */
  sseStreams(): number
}

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
const UWS_METHOD = { GET: 'get', POST: 'post', PUT: 'put', PATCH: 'patch', DELETE: 'del' } as const

/** A malformed escape keeps the raw text; the params schema then rejects it with a clear 422. */
function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s)
  } catch {
    return s
  }
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
  const link = trackNatsLink(nc, log)

  /** Per-request state and the synchronous reads uWS requires before any await. */
  function begin(res: HttpResponse, req: HttpRequest): ResponseState & { method: string; url: string; started: number } {
    const given = req.getHeader('x-request-id')
    const state = {
      aborted: false,
      done: false,
      requestId: given !== '' && given.length <= 128 && /^[\w.:-]+$/.test(given) ? given : nextRequestId(),
      headers: cors.headersFor(req.getHeader('origin')),
      method: req.getCaseSensitiveMethod(),
      url: req.getUrl(),
      started: performance.now(),
    }
    res.onAborted(() => {
      state.aborted = true
    })
    return state
  }

  function finish(state: ReturnType<typeof begin>, status: number): void {
    const ms = Math.round((performance.now() - state.started) * 100) / 100
    if (state.url === '/health') log.debug({ reqId: state.requestId, method: state.method, url: state.url, status, ms }, 'request')
    else log.info({ reqId: state.requestId, method: state.method, url: state.url, status, ms }, 'request')
  }

  function fail(res: HttpResponse, state: ReturnType<typeof begin>, err: unknown): void {
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
      const declared = Number(req.getHeader('content-length') || '0')
      let bodyPromise: Promise<Buffer | null> | undefined
      if (route.body !== undefined) {
        if (declared > options.maxBodyBytes) {
          fail(res, state, new AppError(413, 'request.too_large', `body larger than ${String(options.maxBodyBytes)} bytes`))
          return
        }
        bodyPromise = readBody(res, options.maxBodyBytes)
      }
      void forward(res, state, route, { authorization, clientIp, contentType, params, rawQuery, lastEventId, bodyPromise })
    }
    app[UWS_METHOD[route.def.method]](uwsPath, handler)
  }

  async function forward(
    res: HttpResponse,
    state: ReturnType<typeof begin>,
    route: CompiledRoute,
    input: { authorization: string; clientIp: string; contentType: string; params: Record<string, string>; rawQuery: string; lastEventId: string; bodyPromise: Promise<Buffer | null> | undefined },
  ): Promise<void> {
    let stream: SseStream | undefined
    try {
      let caller: Caller | null = null
      if (route.def.auth) {
        if (input.authorization === '') throw new AppError(401, 'auth.unauthorized', 'authentication required')
        caller = await verifier.verify(input.authorization)
      }
      const paramIssues = textIssues(input.params, 'path')
      if (paramIssues.length > 0) throw invalidText(paramIssues)
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
        { requestId: state.requestId, caller, params: input.params, query, clientIp: input.clientIp, ...(stream === undefined ? {} : { streamChannelId: stream.channelId }), ...(streamLastId === undefined ? {} : { streamLastId }) },
        body,
      )
      // fails fast with 503 while NATS is disconnected (gateway/nats-status.ts)
      const msg = await link.guard(() => nc.request(route.subject, out.data, { timeout: rpcTimeoutMs, headers: out.headers })).catch((err: unknown) => {
        if (err instanceof AppError) throw err
        const failure = classifyNatsError(err)
        if (failure === 'no_responders' || failure === 'closed') throw new AppError(503, 'service.unavailable', 'no service is answering this route right now')
        if (failure === 'timeout') throw new AppError(504, 'service.timeout', 'the service did not answer in time')
        throw err
      })
      const reply = decodeReply(msg.headers, msg.data)
      if (stream !== undefined && route.def.stream !== undefined) {
        const target = reply.status === 200 ? streamTarget(reply.data) : null
        if (target !== null) {
          stream.start(res, state, target, route.def.stream.format, reply.headers)
          finish(state, 200)
          return
        }
        stream.cancel()
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
    state.headers = cors.preflight(req.getHeader('origin'))
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
      })
    })
  })
}
