import { connect } from 'node:net'
import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { eventually } from '../helpers/eventually.ts'

/*
 * Webhooks end to end (gateway, service, workers, sandboxes): CRUD with multi-segment paths, the
 * call with its configured method only, input from body or query over default_values, sync result
 * and ?async=1, and the fuzz cases: wrong method 405, non-JSON body 400, over-size body 413 (just over
 * the limit, and a real 10 MB body both with a content-length and chunked), path traversal,
 * anonymous call of a requires_auth webhook 401, and a webhook of user A running only as A's
 * permissions allow (B's token; A losing the right to run the function).
 */
let env: TestPlatform
let a: { id: string; token: string }
let b: { id: string; token: string }

const ECHO =
  'def handler(input, context):\n    return {"input": input, "user": context["user_email"], "trigger": context["trigger_type"]}\n'
const FAIL = 'def handler(input, context):\n    raise ValueError("nope")\n'

/** A raw HTTP/1.1 request, so `..` and odd escapes reach the server as written (fetch normalises them). */
function raw(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body = '',
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1')
    let data = ''
    s.on('data', (c) => (data += c.toString('utf8')))
    s.on('error', reject)
    s.on('end', () => resolve({ status: Number(data.slice(9, 12)), text: data.slice(data.indexOf('\r\n\r\n') + 4) }))
    const h = Object.entries({
      host: 'x',
      connection: 'close',
      'content-length': String(Buffer.byteLength(body)),
      ...headers,
    })
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('')
    s.write(`${method} ${path} HTTP/1.1\r\n${h}\r\n${body}`)
  })
}

/**
 * A POST of `size` bytes of JSON written as fast as the socket takes it, with a declared
 * content-length or chunked (1 MiB chunks, no length). The server may answer before it has read
 * everything; writes after the answer fail (EPIPE / reset) and are not an error here: the answer is.
 */
function streamed(
  port: number,
  path: string,
  size: number,
  chunked: boolean,
): Promise<{ status: number; text: string; sent: number }> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1')
    let data = Buffer.alloc(0)
    let sent = 0
    let answered = false
    const done = () => {
      const text = data.toString('utf8')
      const head = text.slice(0, text.indexOf('\r\n\r\n'))
      let body = text.slice(head.length + 4)
      // a chunked answer: the first chunk is the whole JSON error
      if (/transfer-encoding: chunked/i.test(head))
        body = body.slice(body.indexOf('\r\n') + 2, body.lastIndexOf('\r\n0\r\n'))
      resolve({ status: Number(text.slice(9, 12)), text: body, sent })
    }
    s.on('data', (c: Buffer) => {
      data = Buffer.concat([data, c])
      answered = true
    })
    s.on('error', (err) => (answered ? undefined : reject(err)))
    s.on('close', () => (answered ? done() : reject(new Error(`closed without an answer after ${String(sent)} bytes`))))
    const headers = chunked ? 'transfer-encoding: chunked\r\n' : `content-length: ${String(size)}\r\n`
    s.write(`POST ${path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\n${headers}\r\n`)
    // {"s":"xxx…xxx"} in 1 MiB pieces (size is a multiple of 1 MiB, at least 2 MiB)
    const MIB = 1024 * 1024
    const first = Buffer.alloc(MIB, 'x')
    first.write('{"s":"')
    const middle = Buffer.alloc(MIB, 'x')
    const last = Buffer.alloc(MIB, 'x')
    last.write('"}', MIB - 2)
    // runs again on 'drain'; stops once the server has answered (or closed: no drain then)
    const write = () => {
      if (answered || s.destroyed) return
      while (sent < size) {
        const chunk = sent === 0 ? first : sent + MIB >= size ? last : middle
        sent += chunk.length
        const ok = s.write(
          chunked
            ? Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')])
            : chunk,
        )
        if (sent >= size && chunked) s.write('0\r\n\r\n')
        if (!ok) {
          s.once('drain', write)
          return
        }
      }
    }
    write()
  })
}

t.before(async () => {
  // the default HTTP_MAX_BODY_BYTES (512 KiB): the over-size cases are what a deployment gets
  env = await startTestPlatform(t)
  a = await env.createUser('hook-a@test.local')
  b = await env.createUser('hook-b@test.local')
  for (const [name, code] of [
    ['echo', ECHO],
    ['fail', FAIL],
  ] as const) {
    const r = await env.request('POST', '/api/v1/functions', {
      token: a.token,
      body: {
        namespace: 'hooks',
        name,
        code,
        input_schema: { type: 'object', properties: { n: { type: 'integer' } } },
      },
    })
    if (r.status !== 201) throw new Error(r.text)
  }
})

const create = async (body: Record<string, unknown>, token = a.token) =>
  env.request('POST', '/api/v1/webhooks', {
    token,
    body: { function_namespace: 'hooks', function_name: 'echo', ...body },
  })
const call = (
  method: string,
  path: string,
  o: { token?: string | null; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
) => env.request(method, `/webhooks/${path}`, { token: o.token ?? null, ...o })

t.test('anonymous POST webhook: runs as the owner, body over default_values, result as the answer', async (t) => {
  const res = await create({ path: 'github/push', requires_auth: false, default_values: { n: 1, source: 'default' } })
  t.equal(res.status, 201, res.text)
  t.match(res.body, { path: 'github/push', http_method: 'POST', url_path: '/webhooks/github/push', owner_id: a.id })
  const out = await call('POST', 'github/push', { body: { n: 7, extra: 'x' } })
  t.equal(out.status, 200, out.text)
  t.same(
    out.body,
    { input: { n: 7, source: 'default', extra: 'x' }, user: 'hook-a@test.local', trigger: 'webhook' },
    'request wins over default_values; runs as A',
  )
  t.match(out.headers.get('x-execution-id'), /^[0-9a-f-]{36}$/)
  const empty = await call('POST', 'github/push', { rawBody: '', headers: { 'content-type': 'application/json' } })
  t.same(
    (empty.body as { input: unknown }).input,
    { n: 1, source: 'default' },
    'an empty body is no input: the defaults alone',
  )
  // the management API addresses the multi-segment path directly (and %2F-encoded)
  t.equal((await env.request('GET', '/api/v1/webhooks/github/push', { token: a.token })).status, 200)
  t.equal((await env.request('GET', '/api/v1/webhooks/github%2Fpush', { token: a.token })).status, 200)
  t.equal(
    (await env.request('GET', '/api/v1/webhooks/github/push', { token: b.token })).status,
    404,
    "B does not see A's webhook",
  )
  const list = (await env.request('GET', '/api/v1/webhooks', { token: b.token })).body as unknown[]
  t.same(list, [], "B's list is empty")
})

t.test('GET webhook: input from the query string; only the configured method', async (t) => {
  t.equal(
    (await create({ path: 'q/get', http_method: 'GET', requires_auth: false, default_values: { n: 2 } })).status,
    201,
  )
  const out = await call('GET', 'q/get?x=1&x=2&y=z')
  t.equal(out.status, 200, out.text)
  t.same((out.body as { input: unknown }).input, { n: 2, x: ['1', '2'], y: 'z' })
  const wrong = await call('POST', 'q/get', { body: {} })
  t.equal(wrong.status, 405)
  t.equal(wrong.headers.get('allow'), 'GET')
  t.match(wrong.body, { code: 'route.method_not_allowed' })
  t.equal((await call('DELETE', 'q/get')).status, 405)
  // a method change reaches the gateways through the bucket watch
  t.equal(
    (await env.request('PATCH', '/api/v1/webhooks/q/get', { token: a.token, body: { http_method: 'PUT' } })).status,
    200,
  )
  await eventually(
    async () => ((await call('GET', 'q/get')).status === 405 ? true : undefined),
    'the gateway to see the new method',
  )
  t.equal((await call('PUT', 'q/get', { body: { n: 3 } })).status, 200)
})

t.test(
  'a webhook created or changed a moment ago answers its very first call (the gateway reads the bucket when its copy has no answer)',
  async (t) => {
    for (let i = 0; i < 20; i++) {
      t.equal((await create({ path: `fresh/n${String(i)}`, requires_auth: false })).status, 201)
      const out = await call('POST', `fresh/n${String(i)}`, { body: { i } })
      if (out.status !== 200) t.fail(`call right after create ${String(i)}: ${String(out.status)} ${out.text}`)
    }
    t.equal(
      (await env.request('PATCH', '/api/v1/webhooks/fresh/n0', { token: a.token, body: { http_method: 'PUT' } }))
        .status,
      200,
    )
    t.equal((await call('PUT', 'fresh/n0', { body: {} })).status, 200, 'the new method, at once')
  },
)

t.test('hostile input: non-JSON 400, over-size 413, deep 400, traversal and odd paths 404', async (t) => {
  t.equal((await create({ path: 'fuzz/a', requires_auth: false })).status, 201)
  const notJson = await call('POST', 'fuzz/a', {
    rawBody: 'hello=world',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  })
  t.equal(notJson.status, 400)
  t.match(notJson.body, { code: 'request.malformed_json' })
  t.equal(
    (await call('POST', 'fuzz/a', { rawBody: '[1,2]', headers: { 'content-type': 'application/json' } })).status,
    422,
    'JSON but not an object',
  )
  const big = await call('POST', 'fuzz/a', { body: { s: 'x'.repeat(env.config.HTTP_MAX_BODY_BYTES) } })
  t.equal(big.status, 413)
  t.match(big.body, { code: 'request.too_large' })
  t.equal(
    (
      await call('POST', 'fuzz/a', {
        rawBody: '['.repeat(100) + ']'.repeat(100),
        headers: { 'content-type': 'application/json' },
      })
    ).status,
    400,
    'too deep',
  )
  t.equal(
    (await call('POST', 'fuzz/a', { rawBody: '{"s":"a\\u0000b"}', headers: { 'content-type': 'application/json' } }))
      .status,
    400,
    'NUL',
  )
  const port = Number(new URL(env.base).port)
  for (const p of [
    '/webhooks/fuzz/x/../a',
    '/webhooks/fuzz/./a',
    '/webhooks/fuzz//a',
    '/webhooks/fuzz/%2e%2e/fuzz/a',
    '/webhooks/fuzz%2Fa',
    '/webhooks/../webhooks/fuzz/a',
    '/webhooks/',
    '/webhooks/fuzz/a/',
  ]) {
    const r = await raw(port, 'POST', p, { 'content-type': 'application/json' }, '{}')
    t.equal(r.status, 404, `${p} → ${String(r.status)}`)
  }
  t.equal(
    (await raw(port, 'POST', '/webhooks/fuzz/a', { 'content-type': 'application/json' }, '{}')).status,
    200,
    'the exact path works',
  )
  for (const path of ['../etc', 'a/../b', 'a//b', '.hidden', 'a/./b', 'a b', 'a%2Fb', '']) {
    const r = await create({ path })
    t.equal(r.status, 422, `path ${JSON.stringify(path)} refused`)
  }
  t.equal((await create({ path: 'fuzz/a' })).status, 409, 'a path is one webhook')
  t.equal((await call('POST', 'no/such/hook', { body: {} })).status, 404)
})

t.test('10 MB bodies: declared and chunked, both 413, the platform still answers', async (t) => {
  t.equal((await create({ path: 'fuzz/big', requires_auth: false })).status, 201)
  const port = Number(new URL(env.base).port)
  const tenMb = 10 * 1024 * 1024
  t.ok(
    tenMb > env.config.HTTP_MAX_BODY_BYTES,
    `10 MB is over the limit of ${String(env.config.HTTP_MAX_BODY_BYTES)} bytes`,
  )
  const declared = await streamed(port, '/webhooks/fuzz/big', tenMb, false)
  t.equal(declared.status, 413, `content-length ${String(tenMb)}: ${declared.text.slice(0, 200)}`)
  t.match(JSON.parse(declared.text), { code: 'request.too_large' })
  const chunked = await streamed(port, '/webhooks/fuzz/big', tenMb, true)
  t.equal(
    chunked.status,
    413,
    `chunked, no content-length, ${String(chunked.sent)} bytes sent: ${chunked.text.slice(0, 200)}`,
  )
  t.match(JSON.parse(chunked.text), { code: 'request.too_large' })
  t.equal((await env.request('GET', '/health', { token: null })).status, 200, 'healthy afterwards')
  const ok = await call('POST', 'fuzz/big', { body: { n: 1 } })
  t.equal(ok.status, 200, `a normal call still runs: ${ok.text}`)
})

t.test("requires_auth: 401 anonymous; B cannot run A's function; A (token or API key) can", async (t) => {
  t.equal((await create({ path: 'private/run' })).status, 201, 'requires_auth defaults to true')
  const anon = await call('POST', 'private/run', { body: {} })
  t.equal(anon.status, 401)
  t.equal((await call('POST', 'private/run', { body: {}, token: 'not-a-token' })).status, 401)
  t.equal((await call('POST', 'private/run', { body: {}, token: b.token })).status, 404, "B may not run A's function")
  const mine = await call('POST', 'private/run', { body: { n: 5 }, token: a.token })
  t.equal(mine.status, 200, mine.text)
  t.equal((mine.body as { user: string }).user, 'hook-a@test.local')
  const key = await env.request('POST', '/api/v1/api-keys', {
    token: a.token,
    body: {
      name: 'hook',
      permissions: { 'platform.functions/*/*.execute:own': true, 'platform.functions/*/*.read:own': true },
    },
  })
  t.equal(key.status, 201, key.text)
  const viaKey = await call('POST', 'private/run', {
    body: {},
    headers: { 'x-api-key': (key.body as { key: string }).key },
  })
  t.equal(viaKey.status, 200, viaKey.text)
  // the admin may run anyone's function: a requires_auth webhook runs as the caller
  const admin = await call('POST', 'private/run', { body: {}, token: env.adminToken })
  t.equal((admin.body as { user: string }).user, 'admin@test.local')
})

t.test("a webhook runs only as its owner's permissions allow, checked at the call", async (t) => {
  t.equal((await create({ path: 'perm/check', requires_auth: false })).status, 201)
  // A cannot point a webhook at a function A may not run
  const adminFn = await env.request('POST', '/api/v1/functions', {
    body: { namespace: 'adminfns', name: 'secret', code: ECHO },
  })
  t.equal(adminFn.status, 201)
  t.equal(
    (
      await create({
        path: 'perm/steal',
        requires_auth: false,
        function_namespace: 'adminfns',
        function_name: 'secret',
      })
    ).status,
    404,
  )
  t.equal((await call('POST', 'perm/check', { body: {} })).status, 200)
  // A loses the right to run functions (Users role taken away): the webhook stops at the next call
  t.equal((await env.request('DELETE', `/api/v1/roles/Users/users/${a.id}`)).status, 200)
  const denied = await call('POST', 'perm/check', { body: {} })
  t.equal(denied.status, 404, denied.text)
  t.match(denied.body, { code: 'resource.not_found' })
  t.equal((await env.request('POST', `/api/v1/roles/Users/users/${a.id}`)).status, 200)
})

t.test('async calls, function errors, delete', async (t) => {
  await eventually(
    async () => ((await call('POST', 'perm/check', { body: {} })).status === 200 ? true : undefined),
    'A to be a user again',
  )
  const accepted = await call('POST', 'perm/check?async=1', { body: { n: 9 } })
  t.equal(accepted.status, 202, accepted.text)
  const id = (accepted.body as { execution_id: string }).execution_id
  const exec = await eventually(async () => {
    const r = await env.request('GET', `/executions/${id}`, { token: a.token })
    return r.status === 200 && (r.body as { status: string }).status === 'completed'
      ? (r.body as Record<string, unknown>)
      : undefined
  }, 'the async execution')
  t.match(exec, { trigger_type: 'webhook', output_data: { input: { n: 9 } } })
  t.equal((await create({ path: 'err/fail', requires_auth: false, function_name: 'fail' })).status, 201)
  const failed = await call('POST', 'err/fail', { body: {} })
  t.equal(failed.status, 502)
  t.match(failed.body, { code: 'webhook.function_error', detail: /ValueError: nope/ })
  t.equal(
    (await call('POST', 'err/fail', { body: { n: 'x' } })).status,
    422,
    "input checked against the function's input_schema",
  )
  t.equal((await env.request('DELETE', '/api/v1/webhooks/err/fail', { token: b.token })).status, 404)
  t.equal((await env.request('DELETE', '/api/v1/webhooks/err/fail', { token: a.token })).status, 204)
  await eventually(
    async () => ((await call('POST', 'err/fail', { body: {} })).status === 404 ? true : undefined),
    'the deleted webhook to be gone from the gateway',
  )
  t.equal(
    (await env.request('PATCH', '/api/v1/webhooks/perm/check', { token: a.token, body: { is_active: false } })).status,
    200,
  )
  await eventually(
    async () => ((await call('POST', 'perm/check', { body: {} })).status === 404 ? true : undefined),
    'an inactive webhook answers 404',
  )
})
