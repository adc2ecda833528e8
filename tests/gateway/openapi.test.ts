import t from 'tap'
import { allRoutes } from '../../src/main.ts'
import { startTestPlatform } from '../helpers/env.ts'
import { headOfStream } from '../helpers/stream-head.ts'

/* The three OpenAPI documents describe exactly the routes the gateway serves, and the docs pages load locally. */
const env = await startTestPlatform(t)
const routes = allRoutes()

const docs = [
  { surface: 'runtime', spec: '/openapi.json', page: '/docs' },
  { surface: 'management', spec: '/api/v1/openapi.json', page: '/api/v1/docs' },
  { surface: 'adapter', spec: '/adapters/openai/openapi.json', page: '/adapters/openai/docs' },
] as const

for (const d of docs) {
  t.test(`${d.surface} document matches the routes`, async (t) => {
    const r = await env.request('GET', d.spec, { token: null })
    t.equal(r.status, 200)
    const doc = r.body as {
      openapi: string
      paths: Record<string, Record<string, { operationId: string; requestBody?: unknown }>>
    }
    t.equal(doc.openapi, '3.1.0')
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops).map(([m, op]) => `${m.toUpperCase()} ${path} ${op.operationId}`),
    )
    const expected = routes.filter((x) => x.surface === d.surface).map((x) => `${x.method} ${x.path} ${x.id}`)
    t.same(documented.sort(), expected.sort())
    for (const route of routes.filter((x) => x.surface === d.surface && x.body !== undefined)) {
      t.ok(doc.paths[route.path]?.[route.method.toLowerCase()]?.requestBody, `${route.id} documents its body`)
    }
  })
  t.test(`${d.surface} docs page is served without a CDN`, async (t) => {
    const r = await fetch(`${env.base}${d.page}`)
    t.equal(r.status, 200)
    const html = await r.text()
    t.notMatch(html, /https?:\/\//, 'no external asset')
    for (const src of [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string)) {
      const asset = await fetch(`${env.base}${src}`)
      t.equal(asset.status, 200, src)
    }
  })
}

t.test('every management route is reachable (no 404/405 from the router)', async (t) => {
  for (const route of routes.filter((x) => x.target === 'rpc')) {
    const path = route.path
      .replace('{namespace}', 'default')
      .replace('{name}', 'zzz')
      .replace('{id}', '00000000-0000-4000-8000-000000000000')
    // a stream answers its status and headers, then never ends: read those and hang up
    const r =
      route.stream === undefined
        ? await env.request(route.method, path, route.body === undefined ? {} : { body: {} })
        : await headOfStream(env.base, route.method, path, env.adminToken, route.body === undefined ? undefined : '{}')
    t.notOk(
      r.status === 405 || (r.status === 404 && (r.body as { code?: string } | undefined)?.code === 'route.not_found'),
      `${route.method} ${path} → ${String(r.status)}`,
    )
  }
})
