import { createServer } from 'node:net'
import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { startSmtpSink } from '../helpers/smtp.ts'

/*
 * Template resources end to end: CRUD by id and by name, render through the hardened renderer
 * (HTML autoescaped, strict undefined, variable_schema), and send through a real SMTP server
 * process (tests/helpers/smtp-sink.ts) — recipients limit, header injection, nothing sent when
 * rendering fails, permissions at send time, an SMTP server that is down.
 */
const smtp = await startSmtpSink(t)
const env = await startTestPlatform(t, {
  SMTP_HOST: '127.0.0.1',
  SMTP_PORT: String(smtp.port),
  SMTP_DOMAIN: 'test.local',
  TEMPLATE_EMAIL_MAX_RECIPIENTS: '3',
})

const isError = (body: unknown, code: string): boolean =>
  (body as { code?: unknown })?.code === code && typeof (body as { detail?: unknown }).detail === 'string'

async function create(
  e: TestPlatform,
  body: Record<string, unknown>,
  token?: string,
): Promise<{ id: string; name: string }> {
  const res = await e.request('POST', '/api/v1/templates', {
    body: { namespace: 'mail', ...body },
    ...(token === undefined ? {} : { token }),
  })
  if (res.status !== 201) throw new Error(`create template: ${String(res.status)} ${res.text}`)
  return res.body as { id: string; name: string }
}

const welcome = await create(env, {
  name: 'welcome',
  title: 'Welcome, {{ name }}',
  html_content: '<h1>Hello {{ name }}</h1><p>{{ note }}</p>',
  text_content: 'Hello {{ name }}. {{ note }}',
  variable_schema: {
    type: 'object',
    properties: { name: { type: 'string', maxLength: 200 }, note: { type: 'string' } },
    required: ['name', 'note'],
  },
})

t.test('CRUD by id and by name', async (t) => {
  const byId = await env.request('GET', `/api/v1/templates/${welcome.id}`)
  t.equal(byId.status, 200)
  t.match(byId.body, {
    id: welcome.id,
    namespace: 'mail',
    name: 'welcome',
    title: 'Welcome, {{ name }}',
    text_content: 'Hello {{ name }}. {{ note }}',
  })
  const byName = await env.request('GET', '/api/v1/templates/by-name/mail/welcome')
  t.same(byName.body, byId.body, 'by-name answers the same record')
  t.same(
    (await env.request('GET', '/api/v1/templates/mail/welcome')).body,
    byId.body,
    'the generic namespaced address works too',
  )

  const tmp = await create(env, { name: 'temporary', html_content: '<p>{{ x }}</p>' })
  const patched = await env.request('PATCH', `/api/v1/templates/${tmp.id}`, {
    body: { html_content: '<p>{{ y }}</p>', title: 'T' },
  })
  t.equal(patched.status, 200, patched.text)
  t.match(patched.body, { html_content: '<p>{{ y }}</p>', title: 'T', text_content: null, variable_schema: {} })
  t.equal((await env.request('DELETE', `/api/v1/templates/${tmp.id}`)).status, 204)
  const gone = await env.request('GET', `/api/v1/templates/${tmp.id}`)
  t.equal(gone.status, 404)
  t.ok(isError(gone.body, 'resource.not_found'), gone.text)
  t.equal((await env.request('DELETE', `/api/v1/templates/${tmp.id}`)).status, 404)
  t.equal(
    (await env.request('GET', '/api/v1/templates/not-a-uuid')).status,
    422,
    'a malformed id is refused by the schema',
  )
  t.equal((await env.request('PATCH', `/api/v1/templates/${welcome.id}`, { body: { html_content: 42 } })).status, 422)
})

t.test('a template the hardened renderer refuses is refused when saved', async (t) => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['syntax', { html_content: '{% if %}' }, '/html_content'],
    ['constructor chain', { html_content: '{{ range.constructor("return process")() }}' }, '/html_content'],
    ['include', { text_content: '{% include "x" %}', html_content: '' }, '/text_content'],
    ['title', { title: '{{ x | constructor }}', html_content: '' }, '/title'],
    ['variable_schema', { html_content: '', variable_schema: { type: 'no-such-type' } }, '/variable_schema'],
  ]
  for (const [label, body, path] of cases) {
    const res = await env.request('POST', '/api/v1/templates', {
      body: { namespace: 'mail', name: `bad-${label.replace(/ /g, '-').replace('_', '-')}`, ...body },
    })
    t.equal(res.status, 422, `${label}: ${res.text}`)
    t.ok(
      (res.body as { errors?: { path: string }[] }).errors?.some((e) => e.path === path),
      `${label}: issue at ${path}`,
    )
  }
  const patch = await env.request('PATCH', `/api/v1/templates/${welcome.id}`, {
    body: { html_content: '{{ a.__proto__ }}' },
  })
  t.equal(patch.status, 422, 'also on update')
})

t.test('render: HTML autoescaped, title and text plain, variables are data', async (t) => {
  const variables = {
    name: '<script>alert(1)</script>',
    note: '{{ 7 * 7 }} {% raw %}{{ range.constructor("return process")() }}',
  }
  for (const path of [`/templates/${welcome.id}/render`, `/api/v1/templates/${welcome.id}/render`]) {
    const res = await env.request('POST', path, { body: { variables } })
    t.equal(res.status, 200, res.text)
    const out = res.body as { title: string; html_content: string; text_content: string }
    t.equal(
      out.html_content,
      '<h1>Hello &lt;script&gt;alert(1)&lt;/script&gt;</h1><p>{{ 7 * 7 }} {% raw %}{{ range.constructor(&quot;return process&quot;)() }}</p>',
      `${path}: escaped, template syntax in a variable printed as text`,
    )
    t.equal(out.title, 'Welcome, <script>alert(1)</script>', 'the title is plain text (an email subject)')
    t.equal(out.text_content, `Hello <script>alert(1)</script>. ${variables.note}`)
  }
  const plain = await create(env, { name: 'plain', html_content: '<b>{{ x }}</b>' })
  const r = await env.request('POST', `/templates/${plain.id}/render`, { body: { variables: { x: 'a & b' } } })
  t.same(r.body, { title: null, html_content: '<b>a &amp; b</b>', text_content: null }, 'no title/text → null')
})

t.test('render: missing variable, schema failure, hostile variables', async (t) => {
  const loose = await create(env, { name: 'loose', html_content: 'Dear {{ user.first }}, {{ missing }}' })
  const missing = await env.request('POST', `/templates/${loose.id}/render`, {
    body: { variables: { user: { first: 'Ann' } } },
  })
  t.equal(missing.status, 422)
  t.ok(isError(missing.body, 'template.undefined_variable'), missing.text)
  t.match((missing.body as { detail: string }).detail, /missing/)
  const deep = await env.request('POST', `/templates/${loose.id}/render`, { body: { variables: { missing: 1 } } })
  t.ok(isError(deep.body, 'template.undefined_variable'), 'an attribute of a missing variable fails too')

  const noNote = await env.request('POST', `/templates/${welcome.id}/render`, { body: { variables: { name: 'Ann' } } })
  t.equal(noNote.status, 422)
  t.ok(isError(noNote.body, 'template.invalid_variables'), noNote.text)
  const wrongType = await env.request('POST', `/templates/${welcome.id}/render`, {
    body: { variables: { name: 42, note: 'n' } },
  })
  t.ok(
    (wrongType.body as { errors: { path: string }[] }).errors.some((e) => e.path === '/variables/name'),
    wrongType.text,
  )
  t.equal(
    (await env.request('POST', `/templates/${welcome.id}/render`, { body: { variables: 'x' } })).status,
    422,
    'variables must be an object',
  )
  t.equal(
    (await env.request('POST', `/templates/${welcome.id}/render`, { body: { variables: {}, extra: 1 } })).status,
    422,
    'unknown body fields refused',
  )

  // prototype-looking keys are plain data: they neither reach Object.prototype nor leak it
  const proto = await create(env, { name: 'proto', html_content: '{{ a }}|{{ b is defined }}' })
  const pr = await env.request('POST', `/templates/${proto.id}/render`, {
    rawBody: '{"variables":{"a":"x","__proto__":{"b":"polluted"}}}',
    headers: { 'content-type': 'application/json' },
  })
  t.equal(pr.status, 200, pr.text)
  t.equal((pr.body as { html_content: string }).html_content, 'x|false')
  t.equal(({} as Record<string, unknown>)['b'], undefined)

  // the renderer's bounds hold for resources too: a loop that would explode the output stops
  const bomb = await create(env, {
    name: 'bomb',
    html_content: '{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}',
  })
  const b = await env.request('POST', `/templates/${bomb.id}/render`, { body: {} })
  t.equal(b.status, 422)
  t.ok(isError(b.body, 'template.too_large') || isError(b.body, 'template.timeout'), b.text)

  const inactive = await create(env, { name: 'inactive', html_content: 'x', is_active: false })
  t.equal(
    (await env.request('POST', `/templates/${inactive.id}/render`, { body: {} })).status,
    404,
    'an inactive template is not rendered',
  )
  t.equal(
    (await env.request('POST', '/templates/00000000-0000-4000-8000-000000000000/render', { body: {} })).status,
    404,
  )
})

t.test('send: a real email through SMTP', async (t) => {
  const res = await env.request('POST', `/templates/${welcome.id}/send`, {
    body: {
      to: ['ann@test.local', 'ANN@test.local', 'bob@test.local'],
      variables: { name: 'Ann & <Bob>', note: 'see you' },
      from_name: 'Support Desk',
    },
  })
  t.equal(res.status, 200, res.text)
  t.match(res.body, {
    status: 'sent',
    message_id: String,
    recipients: ['ann@test.local', 'bob@test.local'],
    rejected: [],
  })
  const mail = await smtp.next('ann@test.local')
  t.same(mail.to.sort(), ['ann@test.local', 'bob@test.local'], 'one message, duplicate addresses (any case) once')
  t.equal(mail.subject, 'Welcome, Ann & <Bob>', 'title → subject')
  t.equal(mail.text.trim(), 'Hello Ann & <Bob>. see you', 'text_content → plain part')
  t.equal(mail.html, '<h1>Hello Ann &amp; &lt;Bob&gt;</h1><p>see you</p>', 'html_content → HTML part, escaped')
  t.equal(mail.from, 'noreply@test.local')
  t.match(mail.fromHeader, /Support Desk/)

  const v1 = await env.request('POST', `/api/v1/templates/${welcome.id}/send`, {
    body: { to: 'carol@test.local', variables: { name: 'Carol', note: 'v1' } },
  })
  t.equal(v1.status, 200, v1.text)
  t.match((await smtp.next('carol@test.local')).text, /v1/)
})

t.test('send: header injection through variables and from_name', async (t) => {
  const res = await env.request('POST', `/templates/${welcome.id}/send`, {
    body: { to: 'dan@test.local', variables: { name: 'x\r\nBcc: victim@test.local\r\nX-Injected: 1', note: 'inj' } },
  })
  t.equal(res.status, 200, res.text)
  const mail = await smtp.next('dan@test.local')
  t.same(mail.to, ['dan@test.local'], 'the envelope holds only the intended recipient')
  t.notOk(
    mail.headerKeys.includes('bcc') || mail.headerKeys.includes('x-injected'),
    `no injected header: ${mail.headerKeys.join(',')}`,
  )
  t.notMatch(mail.subject, /[\r\n]/)
  t.same(smtp.received('victim@test.local'), [])
  const badName = await env.request('POST', `/templates/${welcome.id}/send`, {
    body: { to: 'dan@test.local', variables: { name: 'a', note: 'b' }, from_name: 'Eve\r\nBcc: victim@test.local' },
  })
  t.equal(badName.status, 422, 'a from_name with a line break is refused')
  const badTo = await env.request('POST', `/templates/${welcome.id}/send`, {
    body: { to: 'dan@test.local\r\nBcc: victim@test.local', variables: { name: 'a', note: 'b' } },
  })
  t.equal(badTo.status, 422, 'a recipient with a line break is refused')
})

t.test('send: recipients limit, render failures send nothing', async (t) => {
  const vars = { name: 'n', note: 'limit' }
  const tooMany = await env.request('POST', `/templates/${welcome.id}/send`, {
    body: { to: ['a1@test.local', 'a2@test.local', 'a3@test.local', 'a4@test.local'], variables: vars },
  })
  t.equal(tooMany.status, 422)
  t.ok(isError(tooMany.body, 'email.too_many_recipients'), tooMany.text)
  t.equal(
    (await env.request('POST', `/templates/${welcome.id}/send`, { body: { to: [], variables: vars } })).status,
    422,
    'no recipient',
  )
  const missing = await env.request('POST', `/templates/${welcome.id}/send`, {
    body: { to: 'a1@test.local', variables: { name: 'n' } },
  })
  t.ok(isError(missing.body, 'template.invalid_variables'), missing.text)
  const loose = await create(env, { name: 'loose-send', html_content: '{{ nothing }}' })
  const undef = await env.request('POST', `/templates/${loose.id}/send`, { body: { to: 'a1@test.local' } })
  t.ok(isError(undef.body, 'template.undefined_variable'), undef.text)
  // the next mail a1 receives is this one: none of the refused sends went out
  t.equal(
    (
      await env.request('POST', `/templates/${welcome.id}/send`, {
        body: { to: 'a1@test.local', variables: { name: 'n', note: 'after' } },
      })
    ).status,
    200,
  )
  t.match((await smtp.next('a1@test.local')).text, /after/)
  for (const a of ['a2@test.local', 'a3@test.local', 'a4@test.local']) t.same(smtp.received(a), [], `nothing to ${a}`)
})

t.test('send: permissions checked when sending', async (t) => {
  const a = await env.createUser('tpl-a@test.local')
  const b = await env.createUser('tpl-b@test.local')
  const own = await create(
    env,
    { namespace: 'tpl-a', name: 'own', html_content: 'hi {{ who }}', title: 'hello' },
    a.token,
  )
  const sent = await env.request('POST', `/templates/${own.id}/send`, {
    token: a.token,
    body: { to: 'a-friend@test.local', variables: { who: 'friend' } },
  })
  t.equal(sent.status, 200, `a Users member sends its own template: ${sent.text}`)
  t.equal((await smtp.next('a-friend@test.local')).subject, 'hello')
  for (const [method, path, body] of [
    ['GET', `/api/v1/templates/${own.id}`, undefined],
    ['GET', '/api/v1/templates/by-name/tpl-a/own', undefined],
    ['PATCH', `/api/v1/templates/${own.id}`, { title: 'mine' }],
    ['DELETE', `/api/v1/templates/${own.id}`, undefined],
    ['POST', `/templates/${own.id}/render`, { variables: { who: 'x' } }],
    ['POST', `/templates/${own.id}/send`, { to: 'b-target@test.local', variables: { who: 'x' } }],
  ] as const) {
    const res = await env.request(method, path, { token: b.token, ...(body === undefined ? {} : { body }) })
    t.equal(res.status, 404, `B ${method} ${path}: ${res.text}`)
  }
  // a reader and renderer of every template may render A's, but sending needs the send grant
  // (render without read, read without render: tests/access/verbs.test.ts)
  await env.request('POST', '/api/v1/roles', {
    body: {
      name: 'TemplateReaders',
      permissions: { 'platform.templates/*/*.read:all': true, 'platform.templates/*/*.render:all': true },
    },
  })
  const reader = await env.createUser('tpl-reader@test.local', ['TemplateReaders'])
  t.equal(
    (
      await env.request('POST', `/templates/${own.id}/render`, {
        token: reader.token,
        body: { variables: { who: 'r' } },
      })
    ).status,
    200,
  )
  const denied = await env.request('POST', `/templates/${own.id}/send`, {
    token: reader.token,
    body: { to: 'b-target@test.local', variables: { who: 'r' } },
  })
  t.equal(denied.status, 403, denied.text)
  t.same(smtp.received('b-target@test.local'), [])
})

t.test(
  'send: an SMTP server that is down answers 502 (without SMTP_HOST: 503, see tests/access/matrix.test.ts)',
  async (t) => {
    const closedPort = await new Promise<number>((resolve) => {
      const s = createServer()
      s.listen(0, '127.0.0.1', () => {
        const port = (s.address() as { port: number }).port
        s.close(() => resolve(port))
      })
    })
    const down = await startTestPlatform(t, {
      SMTP_HOST: '127.0.0.1',
      SMTP_PORT: String(closedPort),
      SMTP_DOMAIN: 'test.local',
    })
    const tpl = await create(down, { name: 'down', html_content: 'x' })
    const res = await down.request('POST', `/templates/${tpl.id}/send`, { body: { to: 'x@test.local' } })
    t.equal(res.status, 502, res.text)
    t.ok(isError(res.body, 'email.send_failed'), res.text)
    t.notMatch(res.text, String(closedPort), 'the SMTP address is not told to the client')
  },
)
