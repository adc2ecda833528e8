import t from 'tap'
import { startTestPlatform } from '../helpers/env.ts'
import { startTestConsole, userWithPassword } from '../helpers/console.ts'

/*
 * The console server as a backend-for-frontend, over plain HTTP against a real platform
 * (AUTH_MODE=password): sign-in puts both tokens in HttpOnly SameSite=Strict cookies and answers
 * none of them; the proxy adds the bearer token itself; unsafe methods without the console's
 * header (or from another origin) are refused; the token routes are not reachable through the
 * proxy; a missing access cookie is refreshed transparently from the refresh cookie, once for
 * many requests at a time; sign-out ends the session; the page carries the CSP.
 */
t.test('the console server: cookies, proxy, CSRF, refresh, sign-out, headers', async (t) => {
  const env = await startTestPlatform(t, { AUTH_MODE: 'password' })
  const { base } = await startTestConsole(t, env)
  await userWithPassword(env, 'console-user@test.local', 'correct horse battery')

  const page = await fetch(`${base}/resources/skills`)
  t.equal(page.status, 200, 'any page path answers the app')
  t.match(await page.text(), /<div id="root">/)
  const csp = page.headers.get('content-security-policy') ?? ''
  t.match(csp, /script-src 'self'(;|$)/, 'no inline script')
  t.match(csp, /frame-ancestors 'none'/)
  t.match(csp, new RegExp(`frame-src ${new URL(env.base).origin.replace(/[.]/g, '\\.')}`), 'frames only from the API')
  t.equal(page.headers.get('x-content-type-options'), 'nosniff')

  const info = await fetch(`${base}/session/info`)
  t.match(await info.json(), { auth_mode: 'password', api_base: env.base })

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-console-request': '1', ...headers },
      body: JSON.stringify(body),
    })
  const noHeader = await fetch(`${base}/session/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'console-user@test.local', password: 'correct horse battery' }),
  })
  t.equal(noHeader.status, 403, 'an unsafe request without X-Console-Request is refused')
  t.match(await noHeader.json(), { code: 'console.cross_site' })
  const otherOrigin = await post(
    '/session/login',
    { email: 'console-user@test.local', password: 'correct horse battery' },
    { origin: 'https://evil.example' },
  )
  t.equal(otherOrigin.status, 403, 'another origin is refused even with the header')

  const wrong = await post('/session/login', { email: 'console-user@test.local', password: 'nope' })
  t.equal(wrong.status, 401, "a wrong password: the API's answer")
  t.match(await wrong.json(), { code: 'auth.invalid_credentials' })

  const login = await post('/session/login', { email: 'console-user@test.local', password: 'correct horse battery' })
  t.equal(login.status, 200)
  const loginText = await login.text()
  t.notMatch(loginText, /access_token|refresh_token|eyJ/, 'no token in the answer')
  const setCookies = login.headers.getSetCookie()
  t.equal(setCookies.length, 2, 'two cookies')
  for (const c of setCookies) {
    t.match(c, /HttpOnly/, 'HttpOnly')
    t.match(c, /SameSite=Strict/, 'SameSite=Strict')
    t.match(c, /Path=\//)
  }
  const jar = (cookies: string[]) => cookies.map((c) => c.split(';')[0]).join('; ')
  const cookies = jar(setCookies)
  const access = setCookies.find((c) => c.startsWith('console_at='))?.split(';')[0] ?? ''
  const refresh = setCookies.find((c) => c.startsWith('console_rt='))?.split(';')[0] ?? ''

  const me = await fetch(`${base}/session/me`, { headers: { cookie: cookies } })
  t.match(await me.json(), { user: { email: 'console-user@test.local' }, isAdmin: false })

  const list = await fetch(`${base}/api/v1/skills`, { headers: { cookie: cookies } })
  t.equal(list.status, 200, 'the proxy adds the bearer token')
  t.same(await list.json(), [])
  const anon = await fetch(`${base}/api/v1/skills`)
  t.equal(anon.status, 401, 'no cookie, no token')

  const create = (cookie: string, headers: Record<string, string> = { 'x-console-request': '1' }) =>
    fetch(`${base}/api/v1/skills`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ namespace: 'console-user', name: 'tone', content: '# Short.' }),
    })
  t.equal((await create(cookies, {})).status, 403, 'a cross-site POST with the cookies is refused')
  t.equal((await create(cookies)).status, 201, 'with the header it goes through')
  const invalid = await fetch(`${base}/api/v1/skills`, {
    method: 'POST',
    headers: { cookie: cookies, 'content-type': 'application/json', 'x-console-request': '1' },
    body: JSON.stringify({ namespace: 'console-user', name: 'Bad Name!' }),
  })
  t.equal(invalid.status, 422, "the API's refusal passes through")
  t.match(await invalid.json(), { code: 'request.invalid', errors: [{ path: /name/ }] }, 'with the field errors')

  const rt = await fetch(`${base}/rt/auth/me`, { headers: { cookie: cookies } })
  t.equal(rt.status, 404, 'the token routes are not behind the proxy')
  const exchange = await fetch(`${base}/rt/auth/token/exchange`, {
    method: 'POST',
    headers: { cookie: cookies, 'content-type': 'application/json', 'x-console-request': '1' },
    body: '{}',
  })
  t.equal(exchange.status, 404)
  const runtime = await fetch(`${base}/rt/chats`, { headers: { cookie: cookies } })
  t.equal(runtime.status, 200, 'runtime routes under /rt')

  // the access cookie gone (expired): several requests at once refresh once, with the refresh cookie
  const answers = await Promise.all(
    [1, 2, 3, 4].map(() => fetch(`${base}/api/v1/skills`, { headers: { cookie: refresh } })),
  )
  t.same(
    answers.map((a) => a.status),
    [200, 200, 200, 200],
    'each answered with a refreshed token',
  )
  const renewed = answers.map((a) => a.headers.getSetCookie())
  t.ok(
    renewed.every((c) => c.length === 2),
    'each carries the new cookies',
  )
  const newRefresh = renewed[0]?.find((c) => c.startsWith('console_rt='))?.split(';')[0] ?? ''
  t.not(newRefresh, refresh, 'the refresh token was rotated')
  t.ok(
    renewed.every((c) => c.find((x) => x.startsWith('console_rt='))?.split(';')[0] === newRefresh),
    'one refresh for all four (the same new token)',
  )
  const later = await fetch(`${base}/api/v1/skills`, { headers: { cookie: newRefresh } })
  t.equal(later.status, 200, 'the rotated refresh token works')
  const newCookies = jar(later.headers.getSetCookie())

  const out = await fetch(`${base}/session/logout`, {
    method: 'POST',
    headers: { cookie: newCookies, 'x-console-request': '1' },
  })
  t.equal(out.status, 204)
  t.ok(
    out.headers.getSetCookie().every((c) => /Max-Age=0/.test(c)),
    'sign-out clears both cookies',
  )
  const after = await fetch(`${base}/api/v1/skills`, { headers: { cookie: newCookies } })
  t.equal(after.status, 401, 'the session is over at the API too')
  t.ok(access !== '', 'had an access cookie')
})
