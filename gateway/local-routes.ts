import type { TemplatedApp } from 'uWebSockets.js'
import type { RouteDef } from '../src/api/route.ts'
import type { CompiledRoute } from './compiled-route.ts'
import type { Cors } from './cors.ts'
import { DOCS_ASSET_PREFIX, DOCS_INIT_JS, docsPage, loadDocsAssets } from './docs.ts'
import { healthReport, type HealthComponents } from './health.ts'
import { send, sendError } from './http.ts'
import type { NatsLink } from './nats-status.ts'
import { buildOpenApi } from './openapi.ts'
import { metricsAuthorized } from '../src/platform/metrics-server.ts'
import { renderMetrics } from '../src/platform/metrics.ts'
import { localTimer, type RequestCycle } from './request-cycle.ts'
import type { Asset, StaticAssets } from './static-assets.ts'

/*
 * What the gateway answers itself, without NATS: /health, /metrics (when this port serves them),
 * the OpenAPI documents and docs pages with their assets, the static files handed in (the
 * component pages' libraries), CORS preflights, and 404/405 for the rest.
 */
export interface LocalRouteDeps {
  routes: readonly RouteDef[]
  version: string
  link: NatsLink
  health: HealthComponents | undefined
  cors: Cors
  /** Files served under their prefixes (GatewayOptions.assets). */
  assets: readonly StaticAssets[]
  /** `GET /metrics` on this port, with the bearer token it needs ('' none); undefined: not here (GatewayOptions.metrics). */
  metrics: { token: string } | undefined
}

const DOCS = [
  { surface: 'runtime' as const, page: '/docs', spec: '/openapi.json' },
  { surface: 'management' as const, page: '/api/v1/docs', spec: '/api/v1/openapi.json' },
  { surface: 'adapter' as const, page: '/adapters/openai/docs', spec: '/adapters/openai/openapi.json' },
]

/** `prefix*` answered from an in-memory table read once at start. */
function serveAssets(
  app: TemplatedApp,
  cycle: RequestCycle,
  prefix: string,
  assets: ReadonlyMap<string, Asset>,
  headers: Record<string, string>,
  timer: ReturnType<typeof localTimer>,
): void {
  app.get(`${prefix}*`, (res, req) => {
    const state = cycle.begin(res, req, timer)
    if (state.log !== undefined) state.log.route = `${prefix}{asset}`
    const asset = assets.get(state.url.slice(prefix.length))
    if (asset === undefined) {
      sendError(res, state, 404, { detail: 'no such asset', code: 'route.not_found' })
      cycle.finish(state, 404)
      return
    }
    send(res, state, 200, asset.body, asset.type, headers)
    cycle.finish(state, 200)
  })
}

/** Prometheus's scrape: the process's registry (src/platform/metrics.ts), behind METRICS_TOKEN when set. */
function serveMetrics(app: TemplatedApp, cycle: RequestCycle, token: string): void {
  const timer = localTimer('metrics')
  app.get('/metrics', (res, req) => {
    const state = cycle.begin(res, req, timer)
    const authorization = req.getHeader('authorization')
    if (!metricsAuthorized(authorization, token)) {
      const body =
        authorization === ''
          ? { detail: 'the metrics need a bearer token (METRICS_TOKEN)', code: 'auth.unauthorized' }
          : { detail: 'invalid token', code: 'auth.invalid_token' }
      sendError(res, state, 401, body, { 'www-authenticate': 'Bearer' })
      cycle.finish(state, 401)
      return
    }
    void (async () => {
      try {
        const m = await renderMetrics()
        send(res, state, 200, m.body, m.contentType)
        cycle.finish(state, 200)
      } catch (err) {
        cycle.fail(res, state, err)
      }
    })()
  })
}

export function serveLocalRoutes(app: TemplatedApp, cycle: RequestCycle, d: LocalRouteDeps): void {
  const health = localTimer('health')
  app.get('/health', (res, req) => {
    const state = cycle.begin(res, req, health)
    const report = healthReport(d.link.state(), d.version, d.health?.())
    send(res, state, report.code, JSON.stringify(report.body))
    cycle.finish(state, report.code)
  })
  if (d.metrics !== undefined) serveMetrics(app, cycle, d.metrics.token)
  const openapi = localTimer('openapi')
  const docs = localTimer('docs')
  for (const doc of DOCS) {
    const document = buildOpenApi(d.routes, doc.surface, d.version)
    const json = JSON.stringify(document)
    const title = (document['info'] as { title: string }).title
    app.get(doc.spec, (res, req) => {
      const state = cycle.begin(res, req, openapi)
      if (state.log !== undefined) state.log.route = doc.spec
      send(res, state, 200, json)
      cycle.finish(state, 200)
    })
    const html = docsPage(title, doc.spec)
    app.get(doc.page, (res, req) => {
      const state = cycle.begin(res, req, docs)
      if (state.log !== undefined) state.log.route = doc.page
      send(res, state, 200, html, 'text/html; charset=utf-8')
      cycle.finish(state, 200)
    })
  }
  const docsAssets = loadDocsAssets()
  docsAssets.set('init.js', { body: Buffer.from(DOCS_INIT_JS), type: 'text/javascript; charset=utf-8' })
  serveAssets(
    app,
    cycle,
    DOCS_ASSET_PREFIX,
    docsAssets,
    { 'cache-control': 'public, max-age=3600' },
    localTimer('docs.assets'),
  )
  const assets = localTimer('assets')
  for (const a of d.assets) serveAssets(app, cycle, a.prefix, a.files, a.headers, assets)
}

/** CORS preflights, then 405 (with Allow) for a known path with another method, else 404. Registered last. */
export function serveFallback(
  app: TemplatedApp,
  cycle: RequestCycle,
  cors: Cors,
  compiled: readonly CompiledRoute[],
): void {
  const preflight = localTimer('preflight')
  const unmatched = localTimer('unmatched')
  app.options('/*', (res, req) => {
    const state = cycle.begin(res, req, preflight)
    state.headers = cors.preflight(req.getHeader('origin'), state.url)
    send(res, state, 204, '')
    cycle.finish(state, 204)
  })
  app.any('/*', (res, req) => {
    const state = cycle.begin(res, req, unmatched)
    const allowed = compiled.filter((r) => r.pattern.test(state.url)).map((r) => r.def.method)
    if (allowed.length > 0) {
      sendError(
        res,
        state,
        405,
        { detail: `${state.method} is not allowed here`, code: 'route.method_not_allowed' },
        { allow: [...new Set(allowed)].join(', ') },
      )
      cycle.finish(state, 405)
      return
    }
    sendError(res, state, 404, { detail: `no route ${state.method} ${state.url}`, code: 'route.not_found' })
    cycle.finish(state, 404)
  })
}
