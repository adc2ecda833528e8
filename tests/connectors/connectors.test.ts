import http from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { startTestPlatform } from '../helpers/env.ts'
import { requireLocalTls, startReceiver, type Received } from '../helpers/local-https.ts'

/*
 * Connectors end to end: an OpenAPI 3 document (YAML, with $refs) imported, its operations called
 * through the gateway against a real HTTPS API on a documentation address (198.51.100.21 on `lo`,
 * a self-signed certificate trusted through OUTBOUND_EXTRA_CA_FILE — the guarded client refuses
 * loopback, so the upstream cannot simply listen on 127.0.0.1). Then what must fail: another
 * user's connector, someone else's secret, loopback / metadata / IPv6 loopback / a name resolving
 * to loopback / a redirect to loopback, plain HTTP to a host no admin listed, external $refs, and
 * the limits (response size, timeout ceiling, operation count, retries).
 */
const ADDRESS = '198.51.100.21'
const tls = requireLocalTls(t, ADDRESS, ['api.test'])

let hangs: http.ServerResponse[] = []
let flaky = 0
let flakyOkAt = 3
const api = await startReceiver(t, tls, (req, res) => route(req, res))
function route(req: Received, res: http.ServerResponse): void {
  const url = new URL(req.url, 'https://api.test')
  const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', 'set-cookie': 'upstream=1', ...headers })
    res.end(JSON.stringify(body))
  }
  if (url.pathname.startsWith('/v1/pets/') && req.method === 'GET')
    return json(200, {
      id: url.pathname.split('/')[3],
      verbose: url.searchParams.get('verbose'),
      trace: req.headers['x-trace'] ?? null,
    })
  if (url.pathname === '/v1/pets' && req.method === 'POST')
    return json(201, { created: JSON.parse(req.body) as unknown })
  if (url.pathname === '/v1/pets' && req.method === 'GET') return json(200, [{ id: '1' }], { 'x-total': '1' })
  if (url.pathname === '/v1/big') {
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.end('x'.repeat(10_000))
    return
  }
  if (url.pathname === '/v1/hang') {
    hangs.push(res)
    return
  }
  if (url.pathname === '/v1/flaky') {
    flaky++
    return flaky >= flakyOkAt ? json(200, { attempt: flaky }) : json(503, { attempt: flaky })
  }
  if (url.pathname === '/v1/redirect') {
    res.writeHead(302, { location: `https://127.0.0.1:${String(api.port)}/v1/pets/1` })
    res.end()
    return
  }
  json(404, { error: 'no route' })
}
t.teardown(() => {
  for (const r of hangs) r.destroy()
  hangs = []
})

// a plain-HTTP API on the same documentation address, which the admin allows over HTTP
const plain = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' })
  res.end('{"plain":true}')
})
await new Promise<void>((resolve) => plain.listen(0, ADDRESS, resolve))
t.teardown(() => new Promise<void>((resolve) => plain.close(() => resolve())))
const plainPort = (plain.address() as AddressInfo).port

const env = await startTestPlatform(t, {
  ROLES: 'gateway,resources',
  OUTBOUND_EXTRA_CA_FILE: tls.certFile,
  CONNECTOR_HTTP_HOSTS: ADDRESS,
  CONNECTOR_MAX_RESPONSE_BYTES: '4096',
  CONNECTOR_TIMEOUT_SECONDS: '1',
  CONNECTOR_MAX_OPERATIONS: '6',
  CONNECTOR_MAX_RETRIES: '2',
})
const alice = await env.createUser('alice@test.local')
const bob = await env.createUser('bob@test.local')
const base = `https://${ADDRESS}:${String(api.port)}/v1`

const PETSTORE = `
openapi: 3.0.3
info: { title: Pet store, version: '1' }
servers:
  - url: https://petstore.example.com/v1
paths:
  /pets:
    get:
      operationId: listPets
      summary: List pets
      parameters:
        - $ref: '#/components/parameters/Limit'
      responses: { '200': { description: ok } }
    post:
      operationId: createPet
      summary: Create a pet
      requestBody:
        required: true
        content:
          application/json:
            schema: { $ref: '#/components/schemas/NewPet' }
      responses: { '201': { description: created } }
  /pets/{id}:
    parameters:
      - { name: id, in: path, required: true, schema: { type: string } }
    get:
      operationId: getPet
      summary: One pet
      parameters:
        - { name: verbose, in: query, schema: { type: boolean } }
        - { name: X-Trace, in: header, schema: { type: string } }
        - { name: session, in: cookie, schema: { type: string } }
      responses: { '200': { description: ok } }
  /pets/{id}/tags:
    post:
      parameters:
        - { name: id, in: path, required: true, schema: { type: string } }
      requestBody:
        content:
          application/json:
            schema: { type: array, items: { type: string } }
      responses: { '200': { description: ok } }
components:
  parameters:
    Limit: { name: limit, in: query, schema: { type: integer, maximum: 100 } }
  schemas:
    NewPet:
      type: object
      required: [name]
      properties:
        name: { type: string }
        tag: { $ref: '#/components/schemas/Tag' }
    Tag: { type: string, maxLength: 20 }
`

const as = (token: string) => ({ token })
const post = (path: string, body: unknown, token = alice.token) => env.request('POST', path, { body, ...as(token) })
const exec = (conn: string, op: string, input: unknown, token = alice.token) =>
  post(`/api/v1/connectors/${conn}/operations/${op}/execute`, { input }, token)

async function connector(
  name: string,
  baseUrl: string,
  extra: Record<string, unknown> = {},
  token = alice.token,
): Promise<void> {
  const res = await post(
    '/api/v1/connectors',
    {
      namespace: 'acme',
      name,
      base_url: baseUrl,
      operations: [{ name: 'ping', method: 'GET', path: '/ping' }],
      ...extra,
    },
    token,
  )
  if (res.status !== 201) throw new Error(`connector ${name}: ${res.text}`)
}

t.before(async () => {
  const s = await post('/api/v1/secrets', { namespace: 'acme', name: 'api-token', value: 'tok-123' })
  if (s.status !== 201) throw new Error(s.text)
})

t.test('import an OpenAPI document (YAML text, $refs resolved) and call its operations', async (t) => {
  const res = await post('/api/v1/connectors/import', {
    namespace: 'acme',
    name: 'pets',
    openapi: PETSTORE,
    base_url: base,
    auth: { type: 'bearer', secret: 'acme/api-token' },
  })
  t.equal(res.status, 201, res.text)
  const rec = res.body as {
    operations: {
      name: string
      method: string
      path: string
      parameters: { properties: Record<string, { type?: string; maxLength?: number }>; required?: string[] }
      locations: Record<string, string>
      body_mapping: unknown
    }[]
    description: string
    base_url: string
  }
  t.same(
    rec.operations.map((o) => o.name),
    ['listPets', 'createPet', 'getPet', 'post_pets_id_tags'],
    'operationId, else method_path',
  )
  t.equal(rec.description, 'Pet store')
  const byName = Object.fromEntries(rec.operations.map((o) => [o.name, o]))
  t.same(
    byName['listPets']?.parameters.properties['limit'],
    { type: 'integer', maximum: 100 },
    'a $ref parameter is resolved',
  )
  t.same(
    byName['createPet']?.parameters.properties['tag'],
    { type: 'string', maxLength: 20 },
    'a nested $ref schema is resolved',
  )
  t.same(byName['createPet']?.parameters.required, ['name'])
  t.same(
    byName['getPet']?.locations,
    { id: 'path', verbose: 'query', 'X-Trace': 'header' },
    'path-level parameters are merged; cookie parameters are skipped',
  )
  t.same(byName['post_pets_id_tags']?.body_mapping, { $: 'body' }, 'a non-object body is one parameter')

  const one = await exec('acme/pets', 'getPet', { id: '7', verbose: true, 'X-Trace': 'abc' })
  t.equal(one.status, 200, one.text)
  t.same((one.body as { status: number; body: unknown }).body, { id: '7', verbose: 'true', trace: 'abc' })
  t.equal((one.body as { status: number }).status, 200)
  const seen = api.received.at(-1) as Received
  t.equal(seen.url, '/v1/pets/7?verbose=true')
  t.equal(seen.headers['authorization'], 'Bearer tok-123', 'the bearer secret is sent')
  t.notOk(
    'set-cookie' in (one.body as { headers: Record<string, string> }).headers,
    'upstream cookies are not passed on',
  )

  const created = await exec('acme/pets', 'createPet', { name: 'Rex', tag: 'dog' })
  t.match(created.body, { status: 201, body: { created: { name: 'Rex', tag: 'dog' } } })
  t.equal(api.received.at(-1)?.headers['content-type'], 'application/json')

  const list = await exec('acme/pets', 'listPets', {})
  t.match(list.body, { status: 200, headers: { 'x-total': '1' }, body: [{ id: '1' }] })

  // a path value cannot walk out of its segment
  const walk = await exec('acme/pets', 'getPet', { id: '../../admin' })
  t.equal(walk.status, 200)
  t.equal(api.received.at(-1)?.url, '/v1/pets/..%2F..%2Fadmin')
  t.equal((await exec('acme/pets', 'getPet', { id: '..' })).status, 422)

  const missing = await exec('acme/pets', 'createPet', { tag: 'dog' })
  t.match(
    missing,
    { status: 422, body: { code: 'connector.invalid_input' } },
    'the input is validated against the operation schema',
  )
  t.match(await exec('acme/pets', 'nope', {}), { status: 404, body: { code: 'connector.operation_not_found' } })
  t.match(
    await post('/api/v1/connectors/import', { namespace: 'acme', name: 'pets', openapi: PETSTORE, base_url: base }),
    { status: 409 },
    'a second import of the same name conflicts',
  )
  const replaced = await post('/api/v1/connectors/import', {
    namespace: 'acme',
    name: 'pets',
    openapi: PETSTORE,
    base_url: base,
    auth: { type: 'bearer', secret: 'acme/api-token' },
    replace: true,
  })
  t.equal(replaced.status, 200, 'replace: true updates it')
})

t.test("user B: 404 on A's connector; a connector naming A's secret gets nothing", async (t) => {
  t.match(await exec('acme/pets', 'listPets', {}, bob.token), { status: 404 })
  t.match(await env.request('GET', '/api/v1/connectors/acme/pets', as(bob.token)), { status: 404 })
  const before = api.received.length
  const res = await post(
    '/api/v1/connectors',
    {
      namespace: 'bobs',
      name: 'thief',
      base_url: base,
      auth: { type: 'bearer', secret: 'acme/api-token' },
      operations: [{ name: 'steal', method: 'GET', path: '/pets' }],
    },
    bob.token,
  )
  t.equal(res.status, 201, res.text)
  t.match(await exec('bobs/thief', 'steal', {}, bob.token), {
    status: 409,
    body: { code: 'connector.secret_unavailable' },
  })
  t.equal(api.received.length, before, 'nothing was sent')
})

t.test('hostile targets are refused after DNS, redirects included', async (t) => {
  const port = String(api.port)
  const targets: [string, string][] = [
    ['loopback', `https://127.0.0.1:${port}`],
    ['metadata', 'https://169.254.169.254'],
    ['v6-loopback', `https://[::1]:${port}`],
    ['localhost', `https://localhost:${port}`],
    ['mapped', `https://[::ffff:127.0.0.1]:${port}`],
  ]
  for (const [name, url] of targets) {
    await connector(name, url)
    t.match(
      await exec(`acme/${name}`, 'ping', {}),
      { status: 400, body: { code: 'outbound.private_address' } },
      `${url} is refused`,
    )
  }
  await connector('redirector', base, { operations: [{ name: 'go', method: 'GET', path: '/redirect' }] })
  t.match(
    await exec('acme/redirector', 'go', {}),
    { status: 400, body: { code: 'outbound.private_address' } },
    'a redirect to loopback is refused at the hop',
  )
  await connector('plain-other', 'http://203.0.113.50')
  t.match(
    await exec('acme/plain-other', 'ping', {}),
    { status: 400, body: { code: 'outbound.not_https' } },
    'plain HTTP to a host no admin listed',
  )
  await connector('plain-ok', `http://${ADDRESS}:${String(plainPort)}`)
  t.match(
    await exec('acme/plain-ok', 'ping', {}),
    { status: 200, body: { status: 200, body: { plain: true } } },
    'plain HTTP to a host in CONNECTOR_HTTP_HOSTS',
  )
  const creds = await post('/api/v1/connectors', {
    namespace: 'acme',
    name: 'creds',
    base_url: 'https://user:pw@api.test',
    operations: [],
  })
  t.equal(creds.status, 422, 'credentials in base_url are refused')
})

t.test(
  "a base URL whose host does not resolve: 502 upstream.dns_failed naming the host, not the database's 503",
  async (t) => {
    await connector('nowhere', 'https://api.nowhere.invalid/v1')
    const res = await exec('acme/nowhere', 'ping', {})
    t.match(res, { status: 502, body: { code: 'upstream.dns_failed' } }, res.text)
    t.match((res.body as { detail: string }).detail, /api\.nowhere\.invalid/, 'the answer names the host')
    t.match(await exec('acme/plain-ok', 'ping', {}), { status: 200 }, 'the platform (and its database) is fine')
  },
)

t.test('OpenAPI documents that would reach outside themselves or are too big', async (t) => {
  const doc = (paths: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    openapi: '3.0.0',
    info: { title: 'x', version: '1' },
    paths,
    ...extra,
  })
  const op = { get: { responses: {} } }
  for (const ref of ['file:///etc/passwd', 'https://example.com/schema.yaml', 'other.yaml#/x']) {
    const res = await post('/api/v1/connectors/import', {
      namespace: 'acme',
      name: 'ext',
      base_url: base,
      openapi: doc({ '/a': { get: { parameters: [{ $ref: ref }], responses: {} } } }),
    })
    t.match(res, { status: 422, body: { code: 'connector.invalid_openapi' } }, `external $ref ${ref} is not followed`)
  }
  const seven = Object.fromEntries(['/a', '/b', '/c', '/d', '/e', '/f', '/g'].map((p) => [p, op]))
  t.match(
    await post('/api/v1/connectors/import', { namespace: 'acme', name: 'many', base_url: base, openapi: doc(seven) }),
    { status: 422, body: { code: 'connector.invalid_openapi' } },
    'more than CONNECTOR_MAX_OPERATIONS',
  )
  const manyOps = Array.from({ length: 7 }, (_, i) => ({ name: `op${String(i)}`, method: 'GET', path: '/x' }))
  t.equal(
    (await post('/api/v1/connectors', { namespace: 'acme', name: 'many2', base_url: base, operations: manyOps }))
      .status,
    422,
    'the cap holds for plain creates too',
  )
  // each level doubles: 2^40 nodes once expanded
  const schemas: Record<string, unknown> = { L0: { type: 'string' } }
  for (let i = 1; i <= 40; i++)
    schemas[`L${String(i)}`] = {
      type: 'object',
      properties: {
        a: { $ref: `#/components/schemas/L${String(i - 1)}` },
        b: { $ref: `#/components/schemas/L${String(i - 1)}` },
      },
    }
  const bomb = doc(
    {
      '/a': {
        post: {
          requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/L40' } } } },
          responses: {},
        },
      },
    },
    { components: { schemas } },
  )
  t.match(
    await post('/api/v1/connectors/import', { namespace: 'acme', name: 'bomb', base_url: base, openapi: bomb }),
    { status: 422, body: { code: 'connector.invalid_openapi' } },
    'a $ref expansion bomb is refused',
  )
  t.match(
    await post('/api/v1/connectors/import', {
      namespace: 'acme',
      name: 'v2',
      base_url: base,
      openapi: { swagger: '2.0', paths: {} },
    }),
    { status: 422 },
    'Swagger 2 is not imported',
  )
  t.match(
    await post('/api/v1/connectors/import', { namespace: 'acme', name: 'bad', base_url: base, openapi: 'a: [' }),
    { status: 422 },
    'broken YAML',
  )
  const noServer = await post('/api/v1/connectors/import', {
    namespace: 'acme',
    name: 'noserver',
    openapi: doc({ '/a': op }),
  })
  t.match(noServer, { status: 422 }, 'no base_url and no servers')
  const rec = await post('/api/v1/connectors/import', {
    namespace: 'acme',
    name: 'recursive',
    base_url: base,
    openapi: doc(
      {
        '/a': {
          post: {
            requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Node' } } } },
            responses: {},
          },
        },
      },
      {
        components: {
          schemas: { Node: { type: 'object', properties: { child: { $ref: '#/components/schemas/Node' } } } },
        },
      },
    ),
  })
  t.equal(rec.status, 201, `a recursive schema imports: ${rec.text}`)
})

t.test('limits: response size, timeout ceiling, retries only for idempotent calls', async (t) => {
  await connector('limits', base, {
    timeout_seconds: 600,
    retry: { max_retries: 5, backoff_ms: 1, on_status: [503] },
    operations: [
      { name: 'big', method: 'GET', path: '/big' },
      { name: 'hang', method: 'GET', path: '/hang' },
      { name: 'flaky', method: 'GET', path: '/flaky' },
      { name: 'flaky_post', method: 'POST', path: '/flaky' },
    ],
  })
  t.match(
    await exec('acme/limits', 'big', {}),
    { status: 502, body: { code: 'outbound.response_too_large' } },
    'CONNECTOR_MAX_RESPONSE_BYTES',
  )
  t.match(
    await exec('acme/limits', 'hang', {}),
    { status: 504, body: { code: 'outbound.timeout' } },
    'timeout_seconds is clamped to CONNECTOR_TIMEOUT_SECONDS',
  )
  flaky = 0
  flakyOkAt = 3
  const ok = await exec('acme/limits', 'flaky', {})
  t.match(ok.body, { status: 200, body: { attempt: 3 } }, 'GET retried on 503')
  flaky = 0
  flakyOkAt = 100
  const gaveUp = await exec('acme/limits', 'flaky', {})
  t.match(gaveUp.body, { status: 503 }, 'the last answer is returned when retries run out')
  t.equal(flaky, 3, 'max_retries 5 is clamped to CONNECTOR_MAX_RETRIES = 2: three attempts')
  flaky = 0
  const once = await exec('acme/limits', 'flaky_post', {})
  t.match(once.body, { status: 503 }, 'POST is not retried')
  t.equal(flaky, 1)
})
