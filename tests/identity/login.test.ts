import { SignJWT } from 'jose'
import { Kvm } from '@nats-io/kv'
import { connect } from '@nats-io/transport-node'
import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import { checkMailer, createMailer } from '../../src/identity/mailer.ts'
import { createRateLimiter } from '../../src/identity/rate-limit.ts'
import { loadConfig } from '../../src/kernel/config.ts'
import { hashPassword } from '../../src/auth/password.ts'
import { ENCRYPTION_KEY, SECRET_KEY, startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { startSmtpSink } from '../helpers/smtp.ts'

/*
 * The three login modes end to end, with codes read from a real SMTP server process; refresh
 * rotation and reuse detection; logout; token exchange; JWT negatives; rate limits.
 */
const smtp = await startSmtpSink(t)
const smtpEnv = { SMTP_HOST: '127.0.0.1', SMTP_PORT: String(smtp.port), SMTP_DOMAIN: 'test.local' }
const codeOf = (text: string) => /\b(\d{6})\b/.exec(text)?.[1] ?? ''

async function withPassword(env: TestPlatform, email: string, password: string): Promise<string> {
  const { id } = await env.createUser(email)
  await env.sql('update users set password_hash = $1 where id = $2', [await hashPassword(password), id])
  return id
}

t.test('otp mode: an emailed code logs in; unknown emails get the same answer and no mail', async (t) => {
  const env = await startTestPlatform(t, { ...smtpEnv, AUTH_MODE: 'otp' })
  await env.createUser('otp-user@test.local')
  t.same((await env.request('GET', '/auth/info', { token: null })).body, { auth_mode: 'otp' })
  const known = await env.request('POST', '/auth/login', { token: null, body: { email: 'otp-user@test.local' } })
  const unknown = await env.request('POST', '/auth/login', { token: null, body: { email: 'nobody@test.local' } })
  t.equal(known.status, 200)
  t.equal(unknown.status, known.status, 'same status for an unknown email')
  t.same(Object.keys(unknown.body as object).sort(), Object.keys(known.body as object).sort(), 'same body shape')
  t.equal((unknown.body as { message: string }).message, (known.body as { message: string }).message)
  const mail = await smtp.next('otp-user@test.local')
  t.match(mail.subject, /login code/i)
  t.equal(mail.from, 'noreply@test.local')
  const code = codeOf(mail.text)
  t.match(code, /^\d{6}$/)
  const session = (known.body as { session_id: string }).session_id
  const ok = await env.request('POST', '/auth/verify-otp', {
    token: null,
    body: { session_id: session, otp_code: code },
  })
  t.equal(ok.status, 200)
  const tokens = ok.body as {
    access_token: string
    refresh_token: string
    token_type: string
    expires_in: number
    user: { email: string; roles: string[] }
  }
  t.match(tokens, { token_type: 'bearer', expires_in: 900, user: { email: 'otp-user@test.local', roles: ['Users'] } })
  const me = await env.request('GET', '/auth/me', { token: tokens.access_token })
  t.match(me.body, { email: 'otp-user@test.local' })
  t.equal(
    (await env.request('POST', '/auth/verify-otp', { token: null, body: { session_id: session, otp_code: code } }))
      .status,
    401,
    'a code works once',
  )
  // The unknown email's session can never verify, and no mail went out for it.
  const guess = await env.request('POST', '/auth/verify-otp', {
    token: null,
    body: { session_id: (unknown.body as { session_id: string }).session_id, otp_code: '000000' },
  })
  t.equal(guess.status, 401)
  t.same(smtp.received('nobody@test.local'), [])
})

t.test('otp: two wrong guesses invalidate the code; an expired code fails', async (t) => {
  const env = await startTestPlatform(t, { ...smtpEnv, AUTH_MODE: 'otp' })
  await env.createUser('guess@test.local')
  const start = await env.request('POST', '/auth/login', { token: null, body: { email: 'guess@test.local' } })
  const session = (start.body as { session_id: string }).session_id
  const code = codeOf((await smtp.next('guess@test.local')).text)
  const wrong = code === '111111' ? '222222' : '111111'
  for (let i = 0; i < 2; i++)
    t.equal(
      (await env.request('POST', '/auth/verify-otp', { token: null, body: { session_id: session, otp_code: wrong } }))
        .status,
      401,
    )
  const late = await env.request('POST', '/auth/verify-otp', {
    token: null,
    body: { session_id: session, otp_code: code },
  })
  t.equal(late.status, 401, 'the right code no longer works after OTP_MAX_ATTEMPTS wrong guesses')
  t.match(late.body, { code: 'auth.invalid_otp' })

  const again = await env.request('POST', '/auth/login', { token: null, body: { email: 'guess@test.local' } })
  const s2 = (again.body as { session_id: string }).session_id
  const c2 = codeOf((await smtp.next('guess@test.local')).text)
  await env.sql("update otp_sessions set expires_at = now() - interval '1 second' where id = $1", [s2])
  t.equal(
    (await env.request('POST', '/auth/verify-otp', { token: null, body: { session_id: s2, otp_code: c2 } })).status,
    401,
    'expired',
  )
})

t.test('password mode; password+otp mode', async (t) => {
  const pw = await startTestPlatform(t, { AUTH_MODE: 'password' })
  await withPassword(pw, 'pw@test.local', 'correct horse battery')
  const ok = await pw.request('POST', '/auth/login', {
    token: null,
    body: { email: 'pw@test.local', password: 'correct horse battery' },
  })
  t.equal(ok.status, 200)
  t.type((ok.body as { access_token: string }).access_token, 'string')
  const bad = await pw.request('POST', '/auth/login', {
    token: null,
    body: { email: 'pw@test.local', password: 'wrong' },
  })
  const unknown = await pw.request('POST', '/auth/login', {
    token: null,
    body: { email: 'ghost@test.local', password: 'wrong' },
  })
  t.equal(bad.status, 401)
  t.same(unknown.body, bad.body, 'unknown email answered like a wrong password')
  t.equal(
    (await pw.request('POST', '/auth/login', { token: null, body: { email: 'pw@test.local' } })).status,
    422,
    'password required',
  )

  const both = await startTestPlatform(t, { ...smtpEnv, AUTH_MODE: 'password+otp' })
  await withPassword(both, 'both@test.local', 'hunter2-hunter2')
  t.equal(
    (await both.request('POST', '/auth/login', { token: null, body: { email: 'both@test.local', password: 'nope' } }))
      .status,
    401,
  )
  t.same(smtp.received('both@test.local'), [], 'no code for a wrong password')
  const step1 = await both.request('POST', '/auth/login', {
    token: null,
    body: { email: 'both@test.local', password: 'hunter2-hunter2' },
  })
  t.type((step1.body as { session_id: string }).session_id, 'string')
  const code = codeOf((await smtp.next('both@test.local')).text)
  const step2 = await both.request('POST', '/auth/verify-otp', {
    token: null,
    body: { session_id: (step1.body as { session_id: string }).session_id, otp_code: code },
  })
  t.equal(step2.status, 200)
})

t.test('refresh rotates; a reused refresh token revokes its family; logout revokes', async (t) => {
  const env = await startTestPlatform(t, { AUTH_MODE: 'password' })
  await withPassword(env, 'rot@test.local', 'rotate-me-please')
  const login = async () =>
    (
      await env.request('POST', '/auth/login', {
        token: null,
        body: { email: 'rot@test.local', password: 'rotate-me-please' },
      })
    ).body as { refresh_token: string }
  const first = await login()
  const r1 = await env.request('POST', '/auth/refresh', { token: null, body: { refresh_token: first.refresh_token } })
  t.equal(r1.status, 200)
  const second = r1.body as { refresh_token: string; access_token: string }
  t.not(second.refresh_token, first.refresh_token, 'rotated')
  t.equal((await env.request('GET', '/auth/me', { token: second.access_token })).status, 200)
  // The first token comes back (stolen): refused, and the whole family dies, the fresh one too.
  const reuse = await env.request('POST', '/auth/refresh', {
    token: null,
    body: { refresh_token: first.refresh_token },
  })
  t.equal(reuse.status, 401)
  t.match(reuse.body, { code: 'auth.refresh_reused' })
  t.equal(
    (await env.request('POST', '/auth/refresh', { token: null, body: { refresh_token: second.refresh_token } })).status,
    401,
    'descendant revoked',
  )
  t.match(
    await env.request('GET', '/auth/me', { token: second.access_token }),
    { status: 401, body: { code: 'auth.session_revoked' } },
    "the revoked family's access token too",
  )

  const other = (await login()) as { refresh_token: string; access_token: string }
  const elsewhere = (await login()) as { refresh_token: string; access_token: string }
  t.equal(
    (await env.request('GET', '/auth/me', { token: other.access_token })).status,
    200,
    'the access token works (and its user is cached)',
  )
  t.equal(
    (await env.request('POST', '/auth/logout', { token: null, body: { refresh_token: other.refresh_token } })).status,
    204,
  )
  t.equal(
    (await env.request('POST', '/auth/refresh', { token: null, body: { refresh_token: other.refresh_token } })).status,
    401,
    'logged out',
  )
  const after = await env.request('GET', '/auth/me', { token: other.access_token })
  t.match(
    after,
    { status: 401, body: { code: 'auth.session_revoked' } },
    'after logout the old access token answers 401 at once, not at its expiry',
  )
  t.equal(
    (await env.request('GET', '/auth/me', { token: elsewhere.access_token })).status,
    200,
    "another session's access token still works",
  )
  t.equal(
    (await env.request('POST', '/auth/refresh', { token: null, body: { refresh_token: 'rt_nonsense' } })).status,
    401,
  )

  const stored = await env.sql<{ token_hash: string }>('select token_hash from refresh_tokens')
  t.notOk(
    stored.some((r) => [first.refresh_token, second.refresh_token, other.refresh_token].includes(r.token_hash)),
    'refresh tokens are stored hashed',
  )
  const beforeDeactivation = await login()
  await env.sql("update users set is_active = false where email = 'rot@test.local'")
  t.equal(
    (
      await env.request('POST', '/auth/refresh', {
        token: null,
        body: { refresh_token: beforeDeactivation.refresh_token },
      })
    ).status,
    401,
    'a deactivated user cannot refresh',
  )
  await env.sql("update users set is_active = true where email = 'rot@test.local'")
  const beforeDeletion = await login()
  await env.sql("delete from users where email = 'rot@test.local'")
  t.equal(
    (await env.request('POST', '/auth/refresh', { token: null, body: { refresh_token: beforeDeletion.refresh_token } }))
      .status,
    401,
    'a deleted user cannot refresh',
  )
})

t.test('JWT negatives against a protected route', async (t) => {
  const env = await startTestPlatform(t)
  const me = (token: string) => env.request('GET', '/auth/me', { token })
  t.equal((await me(env.adminToken)).status, 200)
  const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url')
  const [head, payload, sig] = env.adminToken.split('.') as [string, string, string]
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>
  const cases: [string, string][] = [
    ['alg none', `${b64({ alg: 'none', typ: 'JWT' })}.${payload}.`],
    [
      'wrong key',
      await new SignJWT(claims)
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .sign(new TextEncoder().encode('another-secret-another-secret-0123456789')),
    ],
    [
      'expired',
      await new SignJWT({ ...claims, exp: Math.floor(Date.now() / 1000) - 10 })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .sign(new TextEncoder().encode(SECRET_KEY)),
    ],
    ['tampered payload', `${head}.${b64({ ...claims, sub: '00000000-0000-4000-8000-000000000000' })}.${sig}`],
    [
      'HS512 with the right key',
      await new SignJWT(claims)
        .setProtectedHeader({ alg: 'HS512', typ: 'JWT' })
        .sign(new TextEncoder().encode(SECRET_KEY)),
    ],
  ]
  for (const [name, token] of cases) {
    const res = await me(token)
    t.equal(res.status, 401, name)
    t.match(res.body, { code: /^auth\./ }, `${name}: error body`)
  }
  const pw = await startTestPlatform(t, { AUTH_MODE: 'password' })
  await withPassword(pw, 'rt@test.local', 'refresh-as-access')
  const tokens = (
    await pw.request('POST', '/auth/login', {
      token: null,
      body: { email: 'rt@test.local', password: 'refresh-as-access' },
    })
  ).body as { refresh_token: string }
  t.equal(
    (await pw.request('GET', '/auth/me', { token: tokens.refresh_token })).status,
    401,
    'a refresh token is not an access token',
  )
})

t.test('token exchange needs its permission and provisions with the default role', async (t) => {
  const env = await startTestPlatform(t)
  const plain = await env.createUser('plain@test.local')
  const body = { provider: 'corp-sso', subject: 'u-123', email: 'new.person@test.local' }
  t.equal((await env.request('POST', '/auth/token/exchange', { token: plain.token, body })).status, 403)
  const res = await env.request('POST', '/auth/token/exchange', { token: env.adminToken, body })
  t.equal(res.status, 200)
  t.match(res.body, { provisioned: true, user: { email: 'new.person@test.local', roles: ['GuestUsers'] } })
  const again = await env.request('POST', '/auth/token/exchange', { token: env.adminToken, body })
  t.match(again.body, { provisioned: false })
  t.equal(
    (
      await env.request('POST', '/auth/token/exchange', {
        token: env.adminToken,
        body: { ...body, email: 'absent@test.local', auto_provision: false },
      })
    ).status,
    404,
  )
  const check = await env.request('POST', '/auth/check-permissions', {
    token: plain.token,
    body: { permissions: ['platform.agents/default/default.chat:all', 'platform.system.read:all'], logic: 'OR' },
  })
  t.same(check.body, {
    result: true,
    logic: 'OR',
    checks: [
      { permission: 'platform.agents/default/default.chat:all', has_permission: true },
      { permission: 'platform.system.read:all', has_permission: false },
    ],
  })
})

t.test('login rate limits per email and per IP; a forged X-Forwarded-For is ignored', async (t) => {
  const env = await startTestPlatform(t, {
    AUTH_MODE: 'password',
    RATE_LIMIT_LOGIN_EMAIL_MAX: '3',
    RATE_LIMIT_LOGIN_IP_MAX: '5',
    RATE_LIMIT_OTP_IP_MAX: '2',
  })
  let forged = 0
  // 127.0.0.1 is not a trusted proxy here, so each request's made-up X-Forwarded-For must not matter.
  const headers = () => ({ 'x-forwarded-for': `203.0.113.${String(++forged)}` })
  const login = (email: string) =>
    env.request('POST', '/auth/login', { token: null, body: { email, password: 'x' }, headers: headers() })
  for (let i = 0; i < 3; i++) t.equal((await login('limited@test.local')).status, 401)
  const limited = await login('Limited@Test.local')
  t.equal(limited.status, 429, 'per email (case-insensitive)')
  t.match(limited.body, { code: 'auth.rate_limited', detail: /try again/ })
  const retryAfter = Number(limited.headers.get('retry-after'))
  t.ok(retryAfter > 0 && retryAfter <= 900, `Retry-After within the window (${String(retryAfter)})`)
  t.equal((await login('other@test.local')).status, 401, 'another email still passes the email limit')
  t.equal((await login('third@test.local')).status, 429, 'per IP: the sixth login from this address')
  const otp = (n: number) =>
    env.request('POST', '/auth/verify-otp', {
      token: null,
      body: { session_id: `00000000-0000-4000-8000-00000000000${String(n)}`, otp_code: '123456' },
      headers: headers(),
    })
  t.equal((await otp(1)).status, 401)
  t.equal((await otp(2)).status, 401)
  t.equal((await otp(3)).status, 429, 'OTP verify per IP')
})

t.test('rate limits behind a trusted proxy, and counters shared by replicas through NATS KV', async (t) => {
  // ranges: the test's peer 127.0.0.1 is in 127.0.0.0/8; hops in either range are proxies too
  const env = await startTestPlatform(t, {
    AUTH_MODE: 'password',
    TRUSTED_PROXIES: '127.0.0.0/8, fd00::/8',
    RATE_LIMIT_LOGIN_EMAIL_MAX: '3',
    RATE_LIMIT_LOGIN_IP_MAX: '2',
  })
  const login = (email: string, ip: string) =>
    env.request('POST', '/auth/login', {
      token: null,
      body: { email, password: 'x' },
      headers: { 'x-forwarded-for': ip },
    })
  t.equal((await login('a1@test.local', '198.51.100.1')).status, 401)
  t.equal((await login('a2@test.local', '198.51.100.1')).status, 401)
  t.equal((await login('a3@test.local', '198.51.100.1')).status, 429, 'the forwarded client address is limited')
  t.equal(
    (await login('a4@test.local', '10.9.9.9, 198.51.100.2')).status,
    401,
    'another client behind the proxy has its own counter (the nearest hop counts)',
  )
  t.equal(
    (await login('a5@test.local', '198.51.100.2, 198.51.100.1')).status,
    429,
    'a client cannot escape by prepending hops',
  )
  t.equal(
    (await login('a6@test.local', '198.51.100.9, ::ffff:198.51.100.1, 127.0.0.5')).status,
    429,
    'a proxy in the range is skipped; the IPv4-mapped hop is the same client',
  )
  t.equal((await login('a7@test.local', '2001:db8::7, fd00::5')).status, 401, 'an IPv6 client behind an IPv6 proxy')
  t.equal((await login('a8@test.local', '2001:DB8::7')).status, 401, 'the same client (one spelling)')
  t.equal((await login('a9@test.local', '2001:db8::7')).status, 429, 'its own counter, now full')

  // Two replicas, each with its own NATS connection, counting the same subjects at the same time.
  const bucket = `${env.config.NATS_PREFIX}_RATE_LIMITS`
  const connections = await Promise.all([
    connect({ servers: env.config.NATS_URL }),
    connect({ servers: env.config.NATS_URL }),
  ])
  t.teardown(() => Promise.all(connections.map((c) => c.close())))
  const [a, b] = await Promise.all(
    connections.map(async (nc) =>
      createRateLimiter(await new Kvm(nc).open(bucket), env.config.RATE_LIMIT_WINDOW_SECONDS),
    ),
  )
  if (a === undefined || b === undefined) throw new Error('two limiters expected')
  await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a : b).hit('test', 'burst', 10)))
  await t.rejects(
    a.hit('test', 'burst', 10),
    { code: 'auth.rate_limited' },
    'ten concurrent hits from two replicas all counted',
  )
  await t.rejects(b.hit('test', 'burst', 10), { code: 'auth.rate_limited' })
  // Failures counted by another replica limit this platform's login endpoint.
  for (let i = 0; i < 3; i++) await a.record('login-fail-pair', 'shared@test.local 198.51.100.3')
  t.equal((await login('shared@test.local', '198.51.100.3')).status, 429, 'limited by failures counted elsewhere')
})

t.test('wrong passwords from other addresses cannot lock the superadmin out; guessing stays bounded', async (t) => {
  // a day's window: a fixed window rolling over (and resetting the counts) mid-test becomes unlikely
  const env = await startTestPlatform(t, {
    AUTH_MODE: 'password',
    TRUSTED_PROXIES: '127.0.0.1',
    RATE_LIMIT_LOGIN_EMAIL_MAX: '3',
    RATE_LIMIT_LOGIN_ACCOUNT_FAILURES_MAX: '6',
    RATE_LIMIT_LOGIN_IP_MAX: '100',
    RATE_LIMIT_WINDOW_SECONDS: '86400',
  })
  const admin = env.config.SUPERADMIN_EMAIL
  await env.sql('update users set password_hash = $1 where lower(email) = $2', [
    await hashPassword('the-right-one'),
    admin,
  ])
  const login = (password: string, ip: string) =>
    env.request('POST', '/auth/login', {
      token: null,
      body: { email: admin, password },
      headers: { 'x-forwarded-for': ip },
    })

  // One attacking address: three guesses checked, then refused for the window.
  for (let i = 0; i < 3; i++) t.equal((await login(`guess-${String(i)}`, '203.0.113.66')).status, 401)
  t.equal((await login('guess-3', '203.0.113.66')).status, 429, 'the fourth guess from one address is not checked')
  t.equal(
    (await login('the-right-one', '198.51.100.7')).status,
    200,
    'the superadmin still logs in from their own address',
  )

  // Many addresses: once the account has its 6 failures, an address that failed is not checked
  // again, and each fresh address gets one guess.
  let checked = 3
  for (let n = 0; n < 10; n++) {
    const ip = `203.0.113.${String(100 + n)}`
    for (let i = 0; i < 3; i++) {
      const res = await login(`spread-${String(n)}-${String(i)}`, ip)
      if (res.status === 401) checked++
      else t.equal(res.status, 429, res.text)
    }
  }
  // 3 from the first address and 3 from the next fill the budget of 6; then one per fresh address (9)
  t.equal(checked, 6 + 9, 'guesses checked: the account budget, then one per fresh address')
  const after = await login('the-right-one', '198.51.100.7')
  t.equal(after.status, 200, 'the superadmin still logs in after the spread-out attack')
  t.match(after.body, { access_token: /./ })
  t.equal(
    (await login('the-right-one', '203.0.113.66')).status,
    429,
    'an address that failed too often is refused even with the right password',
  )
})

t.test('without SMTP: development logs the code with a warning; production refuses otp modes', async (t) => {
  const lines: Record<string, unknown>[] = []
  const log = pino(
    { level: 'warn' },
    { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  )
  const dir = mkdtempSync(join(tmpdir(), 'mailer-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const dev = loadConfig({
    NODE_ENV: 'development',
    DATA_DIR: dir,
    SECRET_KEY,
    ENCRYPTION_KEY,
    DATABASE_PASSWORD: 'unused',
    AUTH_MODE: 'otp',
  })
  const mailer = createMailer(dev, log)
  t.match(lines[0], { level: 40, msg: /cannot be emailed.*development only/ }, 'warned at start')
  await mailer.sendLoginCode('dev@test.local', '123456', 10)
  t.match(lines[1], { level: 40, to: 'dev@test.local', code: '123456', msg: /development only/ })
  const prod = { ...dev, NODE_ENV: 'production' as const }
  t.throws(() => checkMailer(prod), { code: 'config.invalid', message: /SMTP_HOST/ })
  t.doesNotThrow(() => checkMailer({ ...prod, AUTH_MODE: 'password' }), 'password mode needs no SMTP')
  t.doesNotThrow(() => checkMailer({ ...prod, SMTP_HOST: 'smtp.example.com' }))
})
