import t from 'tap'
import { openViewTicket } from '../../src/components/store.ts'
import { MAX_EMBED_DEPTH } from '../../src/components/handlers.ts'
import { SECRET_KEY, startTestPlatform, type TestPlatform } from '../helpers/env.ts'

/*
 * Embedded components (`enabled_components`) through the gateway: a rendered page's nested frame
 * loads `/components/view/embed/{ns}/{name}?ticket=<the page's ticket>`. The target must be in the
 * embedding component's enabled_components (403), viewable by whoever the page runs as (404), and
 * on a share page shared or public itself; its page gets its own ticket (same user, same share
 * link, never longer-lived), so its proxy calls follow its own enabled lists; nesting is bounded.
 */
let env: TestPlatform
let a: { id: string; token: string }
let b: { id: string; token: string }

const SIMPLE =
  'export default function C({ input }: { input: { n?: number } }) { return <p id="n">{input.n ?? 0}</p> }\n'

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
const render = async (path: string, token: string) => {
  const res = await env.request('GET', path, { token })
  if (res.status !== 200) throw new Error(`${path}: ${String(res.status)} ${res.text}`)
  return { ticket: ticketOf(res.text), csp: res.headers.get('content-security-policy') ?? '' }
}
const embed = (ns: string, name: string, ticket: string, input?: unknown) =>
  env.request(
    'GET',
    `/components/view/embed/${ns}/${name}?ticket=${ticket}${input === undefined ? '' : `&input=${encodeURIComponent(JSON.stringify(input))}`}`,
    { token: null },
  )

t.before(async () => {
  env = await startTestPlatform(t)
  a = await env.createUser('embed-a@test.local')
  b = await env.createUser('embed-b@test.local')
  await ok(
    'POST',
    '/api/v1/functions',
    {
      namespace: 'emb',
      name: 'adder',
      code: 'def handler(input, context):\n    return {"sum": input["a"] + input["b"], "user": context["user_email"]}\n',
      input_schema: { type: 'object' },
    },
    a.token,
  )
  const comp = (name: string, spec: Record<string, unknown>) =>
    ok('POST', '/api/v1/components', { namespace: 'emb', name, source_code: SIMPLE, ...spec }, a.token)
  await comp('child', {
    enabled_functions: ['emb/adder'],
    input_schema: { type: 'object', properties: { n: { type: 'integer' } } },
  })
  await comp('shared-child', { visibility: 'shared' })
  await comp('other', {})
  await comp('parent', { visibility: 'public', enabled_components: ['emb/child', 'emb/shared-child'] })
  await comp('loop', { enabled_components: ['emb/loop'] })
})

t.test("the embedding page's ticket opens an enabled component's page with a ticket of its own", async (t) => {
  const parent = await render('/components/emb/parent/render', a.token)
  t.match(parent.csp, /frame-src 'self'/, "the page may frame the platform's own pages")
  const res = await embed('emb', 'child', parent.ticket, { n: 7 })
  t.equal(res.status, 200, res.text)
  const csp = res.headers.get('content-security-policy') ?? ''
  t.match(csp, /(^|; )sandbox allow-scripts(;|$)/, 'the embedded page is sandboxed too')
  t.notMatch(
    csp,
    /frame-ancestors/,
    'no frame-ancestors: its ancestor is an opaque-origin page no source matches (the ticket is what opens it)',
  )
  t.equal(res.headers.get('cache-control'), 'no-store')
  t.match(res.text, /"component":\{"namespace":"emb","name":"child"/)
  t.match(res.text, /"input":\{"n":7\}/, 'its input')
  t.notMatch(res.text, /eyJ[A-Za-z0-9_-]{10,}\./, 'no platform token on the page')
  const child = ticketOf(res.text)
  t.not(child, parent.ticket, 'a ticket of its own')
  const p = openViewTicket(SECRET_KEY, parent.ticket)
  const c = openViewTicket(SECRET_KEY, child)
  const [row] = await env.sql<{ id: string }>(
    "select id from resources where kind = 'component' and namespace = 'emb' and name = 'child'",
  )
  t.match(c, { c: row?.id, u: a.id, s: null, p: null, d: 1 }, 'the child component, the same viewer, one level deep')
  t.ok((c?.e ?? Infinity) <= (p?.e ?? 0), 'never outliving the embedding ticket')

  // each page calls through its own enabled lists
  const viaChild = await env.request('POST', '/components/view/functions/emb/adder/execute', {
    token: null,
    body: { ticket: child, input: { a: 2, b: 3 } },
  })
  t.equal(viaChild.status, 200, viaChild.text)
  t.match(
    viaChild.body,
    { status: 'success', result: { sum: 5, user: 'embed-a@test.local' } },
    "the child's function runs as the viewer",
  )
  const viaParent = await env.request('POST', '/components/view/functions/emb/adder/execute', {
    token: null,
    body: { ticket: parent.ticket, input: { a: 2, b: 3 } },
  })
  t.match(
    viaParent,
    { status: 403, body: { code: 'component.proxy_not_enabled' } },
    "not the parent's: it enabled the component, not the function",
  )
})

t.test('refused: not enabled, a bad ticket, invalid input, a viewer who may not see it', async (t) => {
  const parent = await render('/components/emb/parent/render', a.token)
  t.match(
    await embed('emb', 'other', parent.ticket),
    { status: 403, body: { code: 'component.proxy_not_enabled' } },
    'not in enabled_components',
  )
  t.match(
    await embed('emb', 'child', `cvt_${'x'.repeat(60)}`),
    { status: 401, body: { code: 'component.ticket_invalid' } },
    'a forged ticket',
  )
  const none = await env.request('GET', '/components/view/embed/emb/child', { token: null })
  t.match(none, { status: 401, body: { code: 'component.ticket_invalid' } }, 'no ticket')
  t.match(
    await embed('emb', 'child', parent.ticket, { n: 'seven' }),
    { status: 422, body: { code: 'component.input_invalid' } },
    "input checked against the child's input_schema",
  )
  // B may view the public parent, not A's private child
  const asB = await render('/components/emb/parent/render', b.token)
  t.equal((await embed('emb', 'child', asB.ticket)).status, 404, "B's page cannot show A's private component")
  t.equal((await embed('emb', 'shared-child', asB.ticket)).status, 404, 'nor a shared one B may not read')
  // the other component's own ticket does not open the parent's enabled list
  const other = await render('/components/emb/other/render', a.token)
  t.equal((await embed('emb', 'child', other.ticket)).status, 403, 'a page whose component does not enable it')
})

t.test('on a share page: runs as the owner, within the same share link; private components stay out', async (t) => {
  const share = await ok('POST', '/api/v1/components/emb/parent/shares', { max_views: 5 }, a.token)
  const page = await env.request('GET', `/components/shared/${String(share['token'])}`, { token: null })
  t.equal(page.status, 200)
  const ticket = ticketOf(page.text)
  t.equal((await embed('emb', 'child', ticket)).status, 404, 'a private component is never shown by link')
  const res = await embed('emb', 'shared-child', ticket)
  t.equal(res.status, 200, res.text)
  const c = openViewTicket(SECRET_KEY, ticketOf(res.text))
  t.equal(c?.s, openViewTicket(SECRET_KEY, ticket)?.s, 'bound to the same share link')
  t.equal(c?.u, a.id, 'running as the owner')
  t.match(res.text, /"mode":"share"/)
  // revoking the link ends the embedded page's calls too
  t.equal(
    (await env.request('DELETE', `/api/v1/components/emb/parent/shares/${String(share['token'])}`, { token: a.token }))
      .status,
    204,
  )
  t.equal((await embed('emb', 'shared-child', ticket)).status, 401, 'the link is gone')
})

t.test(`nesting stops at ${String(MAX_EMBED_DEPTH)} levels`, async (t) => {
  let ticket = (await render('/components/emb/loop/render', a.token)).ticket
  for (let depth = 1; depth <= MAX_EMBED_DEPTH; depth++) {
    const res = await embed('emb', 'loop', ticket)
    t.equal(res.status, 200, `level ${String(depth)}`)
    ticket = ticketOf(res.text)
  }
  t.match(
    await embed('emb', 'loop', ticket),
    { status: 403, body: { code: 'component.proxy_not_enabled' } },
    'one level more is refused',
  )
})
