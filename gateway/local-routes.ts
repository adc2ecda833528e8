import type { TemplatedApp } from 'uWebSockets.js'
import type { RouteDef } from '../src/api/route.ts'
import type { CompiledRoute } from './compiled-route.ts'
import type { Cors } from './cors.ts'
import { DOCS_ASSET_PREFIX, DOCS_INIT_JS, docsPage, loadDocsAssets } from './docs.ts'
import { healthReport, type HealthComponents } from './health.ts'
import { send, sendError } from './http.ts'
import type { NatsLink } from './nats-status.ts'
import { buildOpenApi } from './openapi.ts'
import type { RequestCycle } from './request-cycle.ts'
import type { Asset, StaticAssets } from './static-assets.ts'

/*
 * What the gateway answers itself, without NATS: /health, the OpenAPI documents and docs pages
 * with their assets, the static files handed in (the component pages' libraries), CORS
 * preflights, and 404/405 for the rest.
 */
export interface LocalRouteDeps {
  routes: readonly RouteDef[]
  version: string
  link: NatsLink
  health: HealthComponents | undefined
  cors: Cors
  /** Files served under their prefixes (GatewayOptions.assets). */
  assets: readonly StaticAssets[]
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
): void {
  app.get(`${prefix}*`, (res, req) => {
    const state = cycle.begin(res, req)
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

export function serveLocalRoutes(app: TemplatedApp, cycle: RequestCycle, d: LocalRouteDeps): void {
  app.get('/health', (res, req) => {
    const state = cycle.begin(res, req)
    const report = healthReport(d.link.state(), d.version, d.health?.())
    send(res, state, report.code, JSON.stringify(report.body))
    cycle.finish(state, report.code)
  })
  for (const doc of DOCS) {
    const document = buildOpenApi(d.routes, doc.surface, d.version)
    const json = JSON.stringify(document)
    const title = (document['info'] as { title: string }).title
    app.get(doc.spec, (res, req) => {
      const state = cycle.begin(res, req)
      if (state.log !== undefined) state.log.route = doc.spec
      send(res, state, 200, json)
      cycle.finish(state, 200)
    })
    const html = docsPage(title, doc.spec)
    app.get(doc.page, (res, req) => {
      const state = cycle.begin(res, req)
      if (state.log !== undefined) state.log.route = doc.page
      send(res, state, 200, html, 'text/html; charset=utf-8')
      cycle.finish(state, 200)
    })
  }
  const docsAssets = loadDocsAssets()
  docsAssets.set('init.js', { body: Buffer.from(DOCS_INIT_JS), type: 'text/javascript; charset=utf-8' })
  serveAssets(app, cycle, DOCS_ASSET_PREFIX, docsAssets, { 'cache-control': 'public, max-age=3600' })
  for (const a of d.assets) serveAssets(app, cycle, a.prefix, a.files, a.headers)
}

/** CORS preflights, then 405 (with Allow) for a known path with another method, else 404. Registered last. */
export function serveFallback(
  app: TemplatedApp,
  cycle: RequestCycle,
  cors: Cors,
  compiled: readonly CompiledRoute[],
): void {
  app.options('/*', (res, req) => {
    const state = cycle.begin(res, req)
    state.headers = cors.preflight(req.getHeader('origin'), state.url)
    send(res, state, 204, '')
    cycle.finish(state, 204)
  })
  app.any('/*', (res, req) => {
    const state = cycle.begin(res, req)
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
