import t from 'tap'
import { SignJWT, UnsecuredJWT } from 'jose'
import { startTestPlatform, SECRET_KEY } from '../helpers/env.ts'
import { startGateway } from '../../gateway/server.ts'
import { allRoutes } from '../../src/main.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { createLogger } from '../../src/kernel/log.ts'

/* The HTTP edge: error bodies, limits, auth negatives, request ids, CORS, routing. */
const env = await startTestPlatform(t, { CORS_ORIGINS: 'https://app.example.com', HTTP_MAX_BODY_BYTES: '4096' })
const key = new TextEncoder().encode(SECRET_KEY)

const errorShape = { detail: String, code: String }

t.test('health needs no token', async (t) => {
  const r = await env.request('GET', '/health', { token: null })
  t.equal(r.status, 200)
  t.match(r.body, { status: 'ok', nats: 'connected' })
})

t.test('unknown routes and methods', async (t) => {
  const r = await env.request('GET', '/nope')
  t.equal(r.status, 404)
  t.match(r.body, { ...errorShape, code: 'route.not_found' })
  const m = await env.request('PATCH', '/api/v1/agents')
  t.equal(m.status, 405)
  t.match(m.headers.get('allow'), /GET/)
})

t.test('request ids are generated or echoed', async (t) => {
  const gen = await env.request('GET', '/health')
  t.match(gen.headers.get('x-request-id'), /^[0-9a-f]{8}-/)
  const given = await env.request('GET', '/api/v1/agents', { headers: { 'x-request-id': 'client-123' } })
  t.equal(given.headers.get('x-request-id'), 'client-123')
  const bad = await env.request('GET', '/health', { headers: { 'x-request-id': 'bad id with spaces' } })
  t.not(bad.headers.get('x-request-id'), 'bad id with spaces')
})

t.test('bodies: size, media type, malformed JSON', async (t) => {
  const big = await env.request('POST', '/api/v1/skills', { body: { name: 'big', content: 'x'.repeat(5000) } })
  t.equal(big.status, 413)
  t.match(big.body, { ...errorShape, code: 'request.too_large' })
  const chunked = await fetch(`${env.base}/api/v1/skills`, {
    method: 'POST',
    headers: { authorization: `Bearer ${env.adminToken}`, 'content-type': 'application/json' },
    body: new ReadableStream({
      start(c) {
        for (let i = 0; i < 10; i++) c.enqueue(new TextEncoder().encode('x'.repeat(1000)))
        c.close()
      },
    }),
    duplex: 'half',
  } as RequestInit)
  t.equal(chunked.status, 413, 'a chunked body without content-length is cut at the limit too')
  const text = await env.request('POST', '/api/v1/skills', {
    rawBody: '{"name":"a"}',
    headers: { 'content-type': 'text/plain' },
  })
  t.equal(text.status, 415)
  const broken = await env.request('POST', '/api/v1/skills', {
    rawBody: '{"name":',
    headers: { 'content-type': 'application/json' },
  })
  t.equal(broken.status, 400)
  t.match(broken.body, { ...errorShape, code: 'request.malformed_json' })
  const notObject = await env.request('POST', '/api/v1/skills', { body: [1, 2] })
  t.equal(notObject.status, 422)
  t.match(notObject.body, { ...errorShape, errors: Array })
})

t.test('authentication negatives answer 401 with the error body', async (t) => {
  const cases: [string, Record<string, string>][] = []
  const now = Math.floor(Date.now() / 1000)
  const sign = (claims: Record<string, unknown>, k: Uint8Array = key, alg = 'HS256') =>
    new SignJWT(claims).setProtectedHeader({ alg, typ: 'JWT' }).setSubject(env.adminId).sign(k)
  cases.push(['missing', {}])
  cases.push(['not bearer', { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }])
  cases.push(['garbage', { authorization: 'Bearer not.a.jwt' }])
  cases.push([
    'alg none',
    {
      authorization: `Bearer ${new UnsecuredJWT({ type: 'access', sub: env.adminId }).setExpirationTime('5m').encode()}`,
    },
  ])
  cases.push([
    'wrong key',
    {
      authorization: `Bearer ${await sign({ type: 'access', exp: now + 60 }, new TextEncoder().encode('another-secret-another-secret-0123456789'))}`,
    },
  ])
  cases.push(['HS512', { authorization: `Bearer ${await sign({ type: 'access', exp: now + 60 }, key, 'HS512')}` }])
  cases.push(['expired', { authorization: `Bearer ${await sign({ type: 'access', exp: now - 10 })}` }])
  cases.push(['no exp', { authorization: `Bearer ${await sign({ type: 'access' })}` }])
  cases.push(['refresh type', { authorization: `Bearer ${await sign({ type: 'refresh', exp: now + 60 })}` }])
  const [h, p, s] = env.adminToken.split('.')
  const tampered = JSON.parse(Buffer.from(p as string, 'base64url').toString()) as Record<string, unknown>
  tampered['sub'] = '00000000-0000-4000-8000-000000000000'
  cases.push([
    'tampered',
    {
      authorization: `Bearer ${h as string}.${Buffer.from(JSON.stringify(tampered)).toString('base64url')}.${s as string}`,
    },
  ])
  for (const [name, headers] of cases) {
    const r = await env.request('GET', '/api/v1/agents', { token: null, headers })
    t.equal(r.status, 401, name)
    t.match(r.body, errorShape, name)
    t.equal(r.headers.get('www-authenticate'), 'Bearer', name)
  }
  const valid = await env.request('GET', '/api/v1/agents', { token: await sign({ type: 'access', exp: now + 60 }) })
  t.equal(valid.status, 200, 'sanity: the same construction with the right key and type works')
  const ghost = await new SignJWT({ type: 'access' })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject('00000000-0000-4000-8000-000000000000')
    .setExpirationTime('5m')
    .sign(key)
  t.equal(
    (await env.request('GET', '/api/v1/agents', { token: ghost })).status,
    401,
    'a token for a user that does not exist',
  )
  // through the API: principals are cached in AUTH_CACHE and invalidated by the users endpoints (src/access/)
  const second = await env.createUser('second-admin@test.local', ['Admins'])
  await env.request('PATCH', `/api/v1/users/${env.adminId}`, { token: second.token, body: { is_active: false } })
  t.equal(
    (await env.request('GET', '/api/v1/agents')).status,
    401,
    'a deactivated user is refused at once, with a still-valid token',
  )
  await env.request('PATCH', `/api/v1/users/${env.adminId}`, { token: second.token, body: { is_active: true } })
})

t.test('CORS', async (t) => {
  const pre = await env.request('OPTIONS', '/api/v1/agents', {
    token: null,
    headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST' },
  })
  t.equal(pre.status, 204)
  t.equal(pre.headers.get('access-control-allow-origin'), 'https://app.example.com')
  t.match(pre.headers.get('access-control-allow-headers'), /authorization/)
  const other = await env.request('OPTIONS', '/api/v1/agents', {
    token: null,
    headers: { origin: 'https://evil.example.com' },
  })
  t.equal(other.headers.get('access-control-allow-origin'), null)
  const get = await env.request('GET', '/api/v1/agents', { headers: { origin: 'https://app.example.com' } })
  t.equal(get.headers.get('access-control-allow-origin'), 'https://app.example.com')
  t.match(get.headers.get('access-control-expose-headers'), /x-total-count/)
})

t.test(
  'CORS for Origin: null (sandboxed component pages) only on the ticket proxies, never credentialed',
  async (t) => {
    const view = '/components/view/functions/web/stock/execute'
    const pre = await env.request('OPTIONS', view, {
      token: null,
      headers: {
        origin: 'null',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    })
    t.equal(pre.status, 204)
    t.equal(pre.headers.get('access-control-allow-origin'), 'null')
    t.equal(
      pre.headers.get('access-control-allow-headers'),
      'content-type',
      'no authorization or x-api-key from an opaque origin',
    )
    t.equal(pre.headers.get('access-control-allow-methods'), 'POST')
    t.equal(pre.headers.get('access-control-allow-credentials'), null, 'never with credentials')
    const post = await env.request('POST', view, {
      token: null,
      body: { ticket: `cvt_${'x'.repeat(43)}`, input: {} },
      headers: { origin: 'null' },
    })
    t.equal(post.status, 401, 'the ticket is what authenticates (an unknown one: 401)')
    t.equal(post.headers.get('access-control-allow-origin'), 'null')
    t.equal(post.headers.get('access-control-allow-credentials'), null)
    for (const path of ['/api/v1/agents', '/auth/me', '/components/web/stock/proxy/functions/web/stock/execute']) {
      const other = await env.request('OPTIONS', path, {
        token: null,
        headers: { origin: 'null', 'access-control-request-method': 'POST' },
      })
      t.equal(other.headers.get('access-control-allow-origin'), null, `no Origin: null on ${path}`)
    }
  },
)

t.test('a gateway with no service behind it answers 503 at once, not a hang', async (t) => {
  const gw = await startGateway(
    {
      nc: env.platform.nc,
      names: natsNames(`${env.config.NATS_PREFIX}_none`),
      routes: allRoutes(),
      log: createLogger({ level: 'silent' }),
      secretKey: SECRET_KEY,
      corsOrigins: '',
      maxBodyBytes: 4096,
      version: 'test',
    },
    '127.0.0.1',
    0,
  )
  t.teardown(() => gw.close())
  const started = Date.now()
  const r = await fetch(`http://127.0.0.1:${String(gw.port)}/api/v1/agents`, {
    headers: { authorization: `Bearer ${env.adminToken}` },
  })
  t.equal(r.status, 503)
  t.match(await r.json(), { code: 'service.unavailable', detail: String })
  t.ok(Date.now() - started < 5000, 'no responders is detected without waiting for the timeout')
})
