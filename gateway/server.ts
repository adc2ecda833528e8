import uws from 'uWebSockets.js'
import type { TemplatedApp, us_listen_socket } from 'uWebSockets.js'
import type { NatsConnection } from '@nats-io/transport-node'
import type { RouteDef } from '../src/api/route.ts'
import type { Logger } from '../src/kernel/log.ts'
import { requestLogSubject, type NatsNames } from '../src/platform/nats-names.ts'
import { openBlobStore, type BlobStore } from '../src/platform/blob-store.ts'
import { createTokenVerifier } from './auth.ts'
import { clientAddressResolver } from './client-address.ts'
import { compileRoute } from './compiled-route.ts'
import { createCors } from './cors.ts'
import { Forwarder } from './forward.ts'
import type { HealthComponents } from './health.ts'
import { serveFallback, serveLocalRoutes } from './local-routes.ts'
import { trackNatsLink } from './nats-status.ts'
import { createRequestCycle } from './request-cycle.ts'
import { requestLogBatcher } from './request-log.ts'
import { SseRelay, type SseSettings } from './sse.ts'
import type { StaticAssets } from './static-assets.ts'
import { watchWebhooks, webhookHandler } from './webhooks.ts'

/*
 * The HTTP edge on uWebSockets.js. It holds no database connection: it authenticates the bearer
 * token, validates the request against the route's TypeBox schemas and forwards it over NATS
 * request/reply, then copies the reply bytes to the socket. This file wires the parts: the request
 * cycle (request-cycle.ts), what the gateway answers itself (local-routes.ts), forwarded routes
 * (forward.ts, with the input rules of request-checks.ts), webhooks (webhooks.ts) and SSE (sse.ts).
 */
export interface GatewayOptions {
  nc: NatsConnection
  names: NatsNames
  routes: readonly RouteDef[]
  log: Logger
  secretKey: string
  corsOrigins: string
  maxBodyBytes: number
  /** The JSON body limit of routes carrying a document (`RouteDef.bodyLimit`); HTTP_MAX_BODY_BYTES when smaller or unset. */
  documentBodyBytes?: number
  rpcTimeoutMs?: number
  version: string
  /** Peers whose X-Forwarded-For is believed (TRUSTED_PROXIES: comma-separated addresses and CIDR ranges). */
  trustedProxies?: string
  /** Server-Sent Events settings (SSE_PING_SECONDS, SSE_MAX_BUFFER_BYTES, SSE_IDLE_TIMEOUT_SECONDS); defaults in gateway/sse.ts. */
  sse?: Partial<SseSettings>
  /** Dependencies /health reports besides NATS (Postgres, workers); see gateway/health.ts. */
  health?: HealthComponents
  /** The object store of streamed uploads and downloads (routes with `blob`); default: the FILES bucket, opened on first use. */
  blobs?: () => Promise<BlobStore>
  /** Files served from memory under their prefixes (the component pages' libraries); none by default. */
  assets?: readonly StaticAssets[]
  /**
   * `GET /metrics` (Prometheus, src/platform/metrics.ts) on this port, behind a bearer token when
   * `token` is not ''; unset: not served here (METRICS_PORT serves it elsewhere, or nowhere).
   */
  metrics?: { token: string }
  /** The API's public base URL, named by JSON-RPC routes' 401 challenge (RouteDef.jsonRpc); '' = the request's Host. */
  publicBaseUrl?: string
  /**
   * Publish a record of every finished request (gateway/request-log.ts) for the analytics writer:
   * on when ANALYTICS_HOST is set. Off, the request cycle skips it with one check.
   */
  requestLog?: { maxRecords?: number; intervalMs?: number }
}

export interface Gateway {
  port: number
  close(): void
  /** Open Server-Sent Events streams (listening, replaying or live). */
  sseStreams(): number
  /** Events relayed and corked writes made for them since start (writes < events when events of a stream arrive together). */
  sseStats(): { events: number; writes: number }
  /** Request-log records published since start (0 when request logging is off). */
  requestLogsPublished(): number
}

const UWS_METHOD = { GET: 'get', POST: 'post', PUT: 'put', PATCH: 'patch', DELETE: 'del' } as const

export async function startGateway(options: GatewayOptions, host: string, port: number): Promise<Gateway> {
  const { nc, log } = options
  // webhook paths come from the WEBHOOKS bucket (watched) only when webhook routes are served
  const webhooks = options.routes.some((r) => r.webhook === true)
    ? await watchWebhooks(nc, options.names, log.child({ mod: 'webhooks' }))
    : undefined
  const verifier = createTokenVerifier(options.secretKey)
  const cors = createCors(options.corsOrigins)
  const clientAddress = clientAddressResolver(options.trustedProxies)
  const requestLog =
    options.requestLog === undefined
      ? undefined
      : requestLogBatcher(nc, requestLogSubject(options.names), log.child({ mod: 'request-log' }), options.requestLog)
  const cycle = createRequestCycle(
    cors,
    log,
    requestLog === undefined ? undefined : { sink: requestLog, clientAddress },
  )
  const rpcTimeoutMs = options.rpcTimeoutMs ?? 30_000
  const compiled = options.routes.map((r) => compileRoute(r, options.names, options))
  const app: TemplatedApp = uws.App()
  const sse = new SseRelay(nc, options.names, log, options.sse)
  const link = trackNatsLink(nc, log)
  const blobs = options.blobs ?? (() => openBlobStore(nc, options.names))

  serveLocalRoutes(app, cycle, {
    routes: options.routes,
    version: options.version,
    link,
    health: options.health,
    cors,
    assets: options.assets ?? [],
    metrics: options.metrics,
  })
  const forwarder = new Forwarder({
    nc,
    link,
    log,
    cycle,
    verifier,
    sse,
    blobs,
    clientAddress,
    maxBodyBytes: options.maxBodyBytes,
    rpcTimeoutMs,
    publicBaseUrl: options.publicBaseUrl ?? '',
  })
  for (const route of compiled) {
    if (route.def.target !== 'rpc' || route.def.webhook === true) continue
    app[UWS_METHOD[route.def.method]](route.uwsPath, forwarder.handler(route))
  }
  if (webhooks !== undefined) {
    app.any(
      '/webhooks/*',
      webhookHandler({
        nc,
        names: options.names,
        table: webhooks,
        verifier,
        link,
        maxBodyBytes: options.maxBodyBytes,
        rpcTimeoutMs,
        ...cycle,
      }),
    )
  }
  serveFallback(app, cycle, cors, compiled)

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
          requestLog?.close()
        },
        requestLogsPublished: () => requestLog?.published ?? 0,
        sseStreams: () => sse.streams.size,
        sseStats: () => ({ events: sse.events, writes: sse.batch.writes }),
      })
    })
  })
}
