import t from 'tap'
import { openViewTicket, sealViewTicket } from '../../src/components/store.ts'
import { SECRET_KEY, startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { eventually } from '../helpers/eventually.ts'
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.ts'

/*
 * Components through the gateway: compile (errors with line and column, imports refused, the
 * bundle limit), render (a page with a strict CSP, a view ticket and no token), visibility in the
 * runtime list and renders, share links (expiry, view limit raced by 20 viewers, revocation), and
 * the proxies: bearer and page families, functions and agents, enabled lists enforced, share pages
 * running as the owner, queries and states through their features' executors.
 */
let env: TestPlatform
let llm: FakeLlm
let a: { id: string; token: string }
let b: { id: string; token: string }

const APP = `import { useState } from 'react'
import { execute } from 'platform-ui'
export default function App({ input }: { input: { region?: string } }) {
  const [out] = useState('ready')
  return <div id="out" data-exec={typeof execute}>{out} {input.region ?? ''}</div>
}
`

const ok = async (method: string, path: string, body: unknown, token: string, status = 201) => {
  const res = await env.request(method, path, { body, token })
  if (res.status !== status) throw new Error(`${method} ${path}: ${String(res.status)} ${res.text}`)
  return res.body as Record<string, unknown>
}
const ticketOf = (html: string): string => {
  const m = /"ticket":"(cvt_[A-Za-z0-9_-]+)"/.exec(html)
  if (m === null) throw new Error('no ticket in the page')
  return m[1] as string
}

t.before(async () => {
  llm = await startFakeLlm()
  t.teardown(() => llm.close())
  // a small bundle limit, so the limit itself is exercised (React is a global: real bundles are tiny)
  env = await startTestPlatform(t, { COMPONENT_MAX_BUNDLE_BYTES: '4096' })
  a = await env.createUser('comp-a@test.local')
  b = await env.createUser('comp-b@test.local')
  await ok(
    'POST',
    '/api/v1/llm-providers',
    {
      name: 'fake',
      provider_type: 'openai',
      api_endpoint: llm.endpoint('openai'),
      api_key: 'sk-fake',
      default_model: 'fake-model',
      is_default: true,
    },
    env.adminToken,
  )
  const fn = (name: string, code: string) =>
    ok('POST', '/api/v1/functions', { namespace: 'comp', name, code, input_schema: { type: 'object' } }, a.token)
  await fn(
    'adder',
    'def handler(input, context):\n    return {"sum": input["a"] + input["b"], "user": context["user_email"]}\n',
  )
  await fn('secret', 'def handler(input, context):\n    return {"secret": 42}\n')
  await ok('POST', '/api/v1/agents', { namespace: 'comp', name: 'helper', system_prompt: 'You help.' }, a.token)
  await ok(
    'POST',
    '/api/v1/components',
    {
      namespace: 'comp',
      name: 'board',
      title: 'Board',
      source_code: APP,
      enabled_functions: ['comp/adder'],
      enabled_agents: ['comp/helper'],
      input_schema: { type: 'object', properties: { region: { type: 'string' } } },
      css_overrides: '#out { color: red } </style><script>alert(1)</script>',
    },
    a.token,
  )
})

t.test('compile builds JSX into a bundle; errors name line and column; only the page libraries import', async (t) => {
  const res = await env.request('POST', '/api/v1/components/comp/board/compile', { token: a.token })
  t.equal(res.status, 200, res.text)
  const body = res.body as { compiled_bundle: string; bundle_bytes: number; source_sha256: string }
  t.match(body.compiled_bundle, /var PlatformComponent=/, 'an IIFE defining the page global')
  t.notMatch(body.compiled_bundle, /<\/script/i, 'nothing that closes the page script')
  t.ok(body.bundle_bytes > 0 && body.bundle_bytes <= 4096)

  await ok(
    'PUT',
    '/api/v1/components/comp/board',
    { source_code: 'export default function A() {\n  return <div>{</div>\n}\n' },
    a.token,
    200,
  )
  const bad = await env.request('POST', '/api/v1/components/comp/board/compile', { token: a.token })
  t.equal(bad.status, 422)
  const err = bad.body as { code: string; errors: { line: number; column: number; message: string }[] }
  t.equal(err.code, 'component.compile_failed')
  t.equal(err.errors[0]?.line, 2, 'the line')
  t.ok((err.errors[0]?.column ?? 0) > 0, 'and the column')
  t.match(err.errors[0]?.message, /line 2, column \d+/)

  await ok(
    'PUT',
    '/api/v1/components/comp/board',
    { source_code: "import pw from '/etc/passwd'\nimport fs from 'node:fs'\nexport default () => pw + fs\n" },
    a.token,
    200,
  )
  const imp = await env.request('POST', '/api/v1/components/comp/board/compile', { token: a.token })
  t.equal(imp.status, 422)
  t.match(imp.text, /cannot import \\"\/etc\/passwd\\"/, 'a server file is never bundled')
  t.notMatch(imp.text, /root:/)

  await ok(
    'PUT',
    '/api/v1/components/comp/board',
    { source_code: `const big = ${JSON.stringify('x'.repeat(5000))}\nexport default () => big\n` },
    a.token,
    200,
  )
  const large = await env.request('POST', '/api/v1/components/comp/board/compile', { token: a.token })
  t.equal(large.status, 422)
  t.equal((large.body as { code: string }).code, 'component.bundle_too_large', 'COMPONENT_MAX_BUNDLE_BYTES applies')

  await ok('PUT', '/api/v1/components/comp/board', { source_code: APP }, a.token, 200)
  t.equal(
    (await env.request('POST', '/api/v1/components/comp/board/compile', { token: b.token })).status,
    404,
    "B does not see A's component",
  )
})

t.test(
  'render: a full page with a strict CSP, the bundle, the CSS kept in its element, a ticket and no token',
  async (t) => {
    const res = await env.request('GET', '/components/comp/board/render?input=%7B%22region%22%3A%22north%22%7D', {
      token: a.token,
    })
    t.equal(res.status, 200, 'rendered')
    t.match(res.headers.get('content-type'), /^text\/html/)
    const csp = res.headers.get('content-security-policy') ?? ''
    const nonce = /script-src 'nonce-([^']+)'/.exec(csp)?.[1]
    t.ok(nonce, 'scripts need the nonce')
    t.notMatch(csp, /unsafe-eval|unsafe-inline/, 'no eval, no inline without nonce')
    t.match(csp, /default-src 'none'/)
    t.match(csp, /connect-src 'self'/)
    t.match(csp, /(^|; )sandbox allow-scripts(;|$)/, 'the page runs in an opaque origin')
    t.notMatch(csp, /allow-same-origin/, "never with this origin's storage")
    t.equal(res.headers.get('referrer-policy'), 'no-referrer')
    t.equal(res.headers.get('cache-control'), 'no-store')
    const html = res.text
    t.match(html, /var PlatformComponent=/, 'the bundle is inline')
    t.ok(
      html.includes(
        `<script nonce="${String(nonce)}" src="/components/assets/react@18.3.1/umd/react.production.min.js">`,
      ),
      'React from the platform at a versioned path',
    )
    t.match(html, /"region":"north"/, 'the input reaches the page')
    t.notMatch(html, /<\/style><script>alert/, 'the CSS cannot close its element')
    t.ok(ticketOf(html).startsWith('cvt_'))
    t.notMatch(html, /eyJ[A-Za-z0-9_-]{10,}\./, 'no JWT on the page')
    t.notMatch(html, /apk_/, 'no API key on the page')

    const asset = await fetch(`${env.base}/components/assets/react@18.3.1/umd/react.production.min.js`)
    t.equal(asset.status, 200, 'the platform serves React itself')
    t.match(asset.headers.get('cache-control'), /immutable/)
    const ui = await fetch(`${env.base}/components/assets/platform-ui@1.1.0/platform-ui.js`)
    t.equal(ui.status, 200)

    const badInput = await env.request('GET', '/components/comp/board/render?input=%7B%22region%22%3A5%7D', {
      token: a.token,
    })
    t.equal(badInput.status, 422)
    t.equal((badInput.body as { code: string }).code, 'component.input_invalid', 'input_schema applies')
    t.equal(
      (await env.request('GET', '/components/comp/board/render', { token: b.token })).status,
      404,
      'B: 404 on a private component',
    )
    t.equal((await env.request('GET', '/components/comp/board/render', { token: null })).status, 401)
  },
)

t.test(
  'visibility: private and shared stay with their readers; public is listed and rendered for everyone',
  async (t) => {
    const listed = async (token: string) =>
      (
        (await env.request('GET', '/components', { token })).body as {
          namespace: string
          name: string
          visibility: string
        }[]
      ).map((c) => `${c.namespace}/${c.name}`)
    t.ok((await listed(a.token)).includes('comp/board'), 'the owner lists it')
    t.notOk((await listed(b.token)).includes('comp/board'), 'private: B does not')
    await ok('PUT', '/api/v1/components/comp/board', { visibility: 'shared' }, a.token, 200)
    t.notOk((await listed(b.token)).includes('comp/board'), 'shared: B still does not (shared = by link)')
    t.equal((await env.request('GET', '/components/comp/board/render', { token: b.token })).status, 404)
    await ok('PUT', '/api/v1/components/comp/board', { visibility: 'public' }, a.token, 200)
    t.ok((await listed(b.token)).includes('comp/board'), 'public: B lists it')
    t.equal(
      (await env.request('GET', '/components/comp/board/render', { token: b.token })).status,
      200,
      'and renders it',
    )
    t.equal(
      (await env.request('GET', '/api/v1/components/comp/board', { token: b.token })).status,
      404,
      'but does not manage it',
    )
    t.equal(
      (await env.request('POST', '/api/v1/components/comp/board/shares', { token: b.token, body: {} })).status,
      404,
      'nor share it (management answers as for any unreadable resource)',
    )
    await ok('PUT', '/api/v1/components/comp/board', { visibility: 'private' }, a.token, 200)
  },
)

t.test('bearer proxies run as the caller and only on enabled targets', async (t) => {
  const run = (fn: string, token: string, comp = 'board') =>
    env.request('POST', `/components/comp/${comp}/proxy/functions/comp/${fn}/execute`, {
      token,
      body: { input: { a: 2, b: 3 } },
    })
  const res = await run('adder', a.token)
  t.equal(res.status, 200, res.text)
  t.match(res.body, { status: 'success', result: { sum: 5, user: 'comp-a@test.local' } })
  const refused = await run('secret', a.token)
  t.equal(refused.status, 403, 'not in enabled_functions')
  t.equal((refused.body as { code: string }).code, 'component.proxy_not_enabled')
  t.equal((await run('adder', b.token)).status, 404, "B: A's private component is not there")
  // public: B may view it, but the call runs as B, who may not execute A's function
  await ok('PUT', '/api/v1/components/comp/board', { visibility: 'public' }, a.token, 200)
  t.equal((await run('adder', b.token)).status, 404, 'the viewer needs its own execute permission')
  await ok('PUT', '/api/v1/components/comp/board', { visibility: 'private' }, a.token, 200)

  const q = await env.request('POST', '/components/comp/board/proxy/queries/comp/q/execute', {
    token: a.token,
    body: {},
  })
  t.equal(q.status, 403, 'queries: the enabled list is checked first')
  await ok(
    'PUT',
    '/api/v1/components/comp/board',
    { enabled_queries: ['comp/*'], enabled_stores: [{ store: 'comp/notes', access: 'readonly' }] },
    a.token,
    200,
  )
  const q2 = await env.request('POST', '/components/comp/board/proxy/queries/comp/q/execute', {
    token: a.token,
    body: {},
  })
  t.equal(q2.status, 404, 'then the query itself is looked up (there is none)')
  const write = await env.request('POST', '/components/comp/board/proxy/states/comp', {
    token: a.token,
    body: { store: 'notes', action: 'set', key: 'k', value: 1 },
  })
  t.equal(write.status, 403, 'a readonly store refuses writes')
  t.equal(
    (
      await env.request('POST', '/components/comp/board/proxy/states/comp', {
        token: a.token,
        body: { store: 'notes', action: 'get', key: 'k' },
      })
    ).status,
    404,
    'no such store',
  )
})

t.test('query and state proxies run the real query and store as the caller', async (t) => {
  // a query of A's on the platform's own database, on a connection A was allowed to use
  const u = new URL(env.databaseUrl)
  const conn = await env.request('POST', '/api/v1/database-connections', {
    body: {
      name: 'comp-db',
      connection_type: 'postgresql',
      host: u.hostname,
      port: Number(u.port),
      database: u.pathname.slice(1),
      username: decodeURIComponent(u.username),
      password: decodeURIComponent(u.password),
      allow_platform_database: true,
    },
  })
  t.equal(conn.status, 201, conn.text)
  await env.sql(
    `insert into roles (name, permissions) values ('comp-db-use', jsonb_build_object('platform.database-connections/comp-db.use:all', true))`,
  )
  await env.sql(`insert into user_roles (user_id, role_id) select $1, id from roles where name = 'comp-db-use'`, [a.id])
  const q = await env.request('POST', '/api/v1/queries', {
    token: a.token,
    body: {
      namespace: 'comp',
      name: 'hello',
      database_connection_id: (conn.body as { id: string }).id,
      sql: 'select :who::text as greeting',
      input_schema: { type: 'object', properties: { who: { type: 'string' } } },
    },
  })
  t.equal(q.status, 201, q.text)
  await ok(
    'PUT',
    '/api/v1/components/comp/board',
    {
      enabled_queries: ['comp/hello'],
      enabled_stores: [
        { store: 'comp/memo', access: 'readwrite' },
        { store: 'comp/notes', access: 'readonly' },
      ],
    },
    a.token,
    200,
  )
  const ran = await env.request('POST', '/components/comp/board/proxy/queries/comp/hello/execute', {
    token: a.token,
    body: { input: { who: 'board' } },
  })
  t.equal(ran.status, 200, ran.text)
  t.match(ran.body, { rows: [{ greeting: 'board' }] })
  t.equal(
    (await env.request('POST', '/components/comp/board/proxy/queries/comp/other/execute', { token: a.token, body: {} }))
      .status,
    403,
    'a query outside the list',
  )

  t.equal(
    (await env.request('POST', '/api/v1/stores', { token: a.token, body: { namespace: 'comp', name: 'memo' } })).status,
    201,
  )
  const state = (body: Record<string, unknown>) =>
    env.request('POST', '/components/comp/board/proxy/states/comp', {
      token: a.token,
      body: { store: 'memo', ...body },
    })
  const set = await state({ action: 'set', key: 'greeting', value: { text: 'hi' } })
  t.equal(set.status, 200, set.text)
  t.match((await state({ action: 'get', key: 'greeting' })).body, { key: 'greeting', value: { text: 'hi' } })
  t.match((await state({ action: 'list' })).body, [{ key: 'greeting' }])
  t.equal((await state({ action: 'delete', key: 'greeting' })).status, 204)
  t.equal((await state({ action: 'get', key: 'greeting' })).status, 404)
  t.equal(
    (
      await env.request('POST', '/components/comp/board/proxy/states/comp', {
        token: b.token,
        body: { store: 'memo', action: 'list' },
      })
    ).status,
    404,
    "B: A's private component is not there",
  )
})

t.test('agents proxy: a message through the component, session keys scoped to it', async (t) => {
  llm.push({ text: 'hello from helper' })
  const res = await env.request('POST', '/components/comp/board/proxy/agents/comp/helper/invoke', {
    token: a.token,
    body: { message: 'hi', session_key: 's1' },
  })
  t.equal(res.status, 200, res.text)
  t.match(res.body, { reply: 'hello from helper', session_key: 's1' })
  const chatId = (res.body as { chat_id: string }).chat_id
  // the same session key used directly is another conversation: a component cannot reach it
  llm.push({ text: 'direct' })
  const direct = await env.request('POST', '/agents/comp/helper/invoke', {
    token: a.token,
    body: { message: 'hi', session_key: 's1' },
  })
  t.equal(direct.status, 200, direct.text)
  t.not((direct.body as { chat_id: string }).chat_id, chatId)
  llm.push({ text: 'again' })
  const again = await env.request('POST', '/components/comp/board/proxy/agents/comp/helper/invoke', {
    token: a.token,
    body: { message: 'more', session_key: 's1' },
  })
  t.equal((again.body as { chat_id: string }).chat_id, chatId, 'the component continues its own session')
  t.equal(
    (
      await env.request('POST', '/components/comp/board/proxy/agents/default/default/invoke', {
        token: a.token,
        body: { message: 'hi' },
      })
    ).status,
    403,
    'not in enabled_agents',
  )
})

t.test('page proxies: the view ticket runs the calls, opens nothing else, and expires', async (t) => {
  const html = (await env.request('GET', '/components/comp/board/render', { token: a.token })).text
  const ticket = ticketOf(html)
  const call = (fn: string, tk = ticket) =>
    env.request('POST', `/components/view/functions/comp/${fn}/execute`, {
      token: null,
      body: { input: { a: 1, b: 1 }, ticket: tk },
    })
  const res = await call('adder')
  t.equal(res.status, 200, res.text)
  t.match(res.body, { result: { sum: 2, user: 'comp-a@test.local' } }, 'runs as the viewer')
  t.equal((await call('secret')).status, 403, 'enabled list enforced')
  t.equal((await call('adder', `cvt_${'A'.repeat(43)}`)).status, 401, 'an unknown ticket')
  t.equal((await env.request('GET', '/auth/me', { token: ticket })).status, 401, 'the ticket is no platform token')
  t.equal((await env.request('GET', '/api/v1/components', { token: ticket })).status, 401)
  // tickets are sealed (AES-GCM under a key from SECRET_KEY), not stored: forge the variants
  const says = openViewTicket(SECRET_KEY, ticket)
  if (says === null) throw new Error('the page ticket does not open')
  t.ok(says.e > Date.now(), 'it carries its expiry')
  t.equal(
    (await call('adder', sealViewTicket(SECRET_KEY, { ...says, e: Date.now() - 1000 }))).status,
    401,
    'an expired ticket',
  )
  t.equal(
    (await call('adder', sealViewTicket('another-secret-key-another-secret-key-0123', says))).status,
    401,
    'a ticket sealed with another key',
  )
  const i = 30
  const altered = `${ticket.slice(0, i)}${ticket[i] === 'A' ? 'B' : 'A'}${ticket.slice(i + 1)}`
  t.equal((await call('adder', altered)).status, 401, 'an altered ticket')
  t.equal((await call('adder')).status, 200, 'the page ticket itself still works')
})

t.test(
  'share links: private refused, expiry, revocation, and proxies from the share page run as the owner',
  async (t) => {
    t.equal(
      (await env.request('POST', '/api/v1/components/comp/board/shares', { token: a.token, body: {} })).status,
      409,
      'a private component is not shared',
    )
    await ok('PUT', '/api/v1/components/comp/board', { visibility: 'shared' }, a.token, 200)
    const share = await ok('POST', '/api/v1/components/comp/board/shares', { expires_in: 3600, max_views: 10 }, a.token)
    t.match(share, { token: /^cs_/, url: /^\/components\/shared\/cs_/, max_views: 10, views: 0 })
    t.ok(share['expires_at'])
    const token = String(share['token'])
    const listed = (await env.request('GET', '/api/v1/components/comp/board/shares', { token: a.token })).body as {
      token: string
    }[]
    t.ok(
      listed.some((s) => s.token === token),
      'listed with its token',
    )
    t.equal((await env.request('GET', '/api/v1/components/comp/board/shares', { token: b.token })).status, 404)

    const page = await env.request('GET', `/components/shared/${token}`, { token: null })
    t.equal(page.status, 200, 'the share page opens without an account')
    t.match(page.headers.get('content-security-policy'), /script-src 'nonce-/)
    t.notMatch(page.text, /eyJ[A-Za-z0-9_-]{10,}\./, 'no token on a share page')
    const ticket = ticketOf(page.text)
    const run = await env.request('POST', '/components/view/functions/comp/adder/execute', {
      token: null,
      body: { input: { a: 4, b: 5 }, ticket },
    })
    t.equal(run.status, 200, run.text)
    t.match(run.body, { result: { sum: 9, user: 'comp-a@test.local' } }, 'runs as the component owner')
    t.equal(
      (
        await env.request('POST', '/components/view/functions/comp/secret/execute', {
          token: null,
          body: { input: {}, ticket },
        })
      ).status,
      403,
      'within the enabled list only',
    )

    await ok('PUT', '/api/v1/components/comp/board', { visibility: 'private' }, a.token, 200)
    t.equal(
      (
        await env.request('POST', '/components/view/functions/comp/adder/execute', {
          token: null,
          body: { input: { a: 1, b: 1 }, ticket },
        })
      ).status,
      401,
      'made private: the page stops working',
    )
    t.equal((await env.request('GET', `/components/shared/${token}`, { token: null })).status, 404, 'and the link too')
    await ok('PUT', '/api/v1/components/comp/board', { visibility: 'shared' }, a.token, 200)

    await env.sql("update component_shares set expires_at = now() - interval '1 second' where views > 0")
    const expired = await env.request('GET', `/components/shared/${token}`, { token: null })
    t.equal(expired.status, 410)
    t.equal((expired.body as { code: string }).code, 'component.share_expired')

    const other = await ok('POST', '/api/v1/components/comp/board/shares', {}, a.token)
    t.equal(
      (
        await env.request('DELETE', `/api/v1/components/comp/board/shares/${String(other['token'])}`, {
          token: b.token,
        })
      ).status,
      404,
      'B cannot revoke',
    )
    t.equal(
      (
        await env.request('DELETE', `/api/v1/components/comp/board/shares/${String(other['token'])}`, {
          token: a.token,
        })
      ).status,
      204,
    )
    t.equal(
      (await env.request('GET', `/components/shared/${String(other['token'])}`, { token: null })).status,
      404,
      'revoked',
    )
    t.equal(
      (await env.request('GET', `/components/shared/cs_${'x'.repeat(43)}`, { token: null })).status,
      404,
      'unknown',
    )
  },
)

t.test('view limit raced by 20 concurrent viewers: exactly max_views pages are served', async (t) => {
  const share = await ok('POST', '/api/v1/components/comp/board/shares', { max_views: 5 }, a.token)
  const token = String(share['token'])
  const results = await Promise.all(
    Array.from({ length: 20 }, () => env.request('GET', `/components/shared/${token}`, { token: null })),
  )
  const statuses = results.map((r) => r.status)
  t.equal(statuses.filter((s) => s === 200).length, 5, 'five views served')
  t.equal(statuses.filter((s) => s === 410).length, 15, 'the rest refused')
  t.ok(
    results
      .filter((r) => r.status === 410)
      .every((r) => (r.body as { code: string }).code === 'component.share_exhausted'),
  )
  const [row] = await env.sql<{ views: number }>('select views from component_shares where max_views = 5')
  t.equal(row?.views, 5, 'the counter never passes the limit')
  // two racing for the last view: exactly one gets it
  const last = await ok('POST', '/api/v1/components/comp/board/shares', { max_views: 1 }, a.token)
  const pair = await Promise.all(
    [0, 1].map(() => env.request('GET', `/components/shared/${String(last['token'])}`, { token: null })),
  )
  t.same(pair.map((r) => r.status).sort(), [200, 410])
})

t.test('deleting a component removes its links and tickets', async (t) => {
  await ok(
    'POST',
    '/api/v1/components',
    { namespace: 'comp', name: 'gone', source_code: APP, visibility: 'shared' },
    a.token,
  )
  const share = await ok('POST', '/api/v1/components/comp/gone/shares', {}, a.token)
  const page = await env.request('GET', `/components/shared/${String(share['token'])}`, { token: null })
  t.equal(page.status, 200)
  const ticket = ticketOf(page.text)
  t.equal((await env.request('DELETE', '/api/v1/components/comp/gone', { token: a.token })).status, 204)
  await eventually(
    async () =>
      (
        await env.sql('select 1 from component_shares s join resources r on r.id = s.component_id where r.name = $1', [
          'gone',
        ])
      ).length === 0
        ? true
        : undefined,
    'cascade',
  )
  t.equal((await env.request('GET', `/components/shared/${String(share['token'])}`, { token: null })).status, 404)
  t.equal(
    (
      await env.request('POST', '/components/view/functions/comp/adder/execute', {
        token: null,
        body: { input: { a: 1, b: 1 }, ticket },
      })
    ).status,
    401,
    "the deleted component's page tickets open nothing",
  )
})
