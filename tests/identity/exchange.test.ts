import t from 'tap'
import { SignJWT } from 'jose'
import { loadPrincipal } from '../../src/auth/principal.ts'
import { SECRET_KEY, startTestPlatform, type TestPlatform } from '../helpers/env.ts'

/*
 * Token exchange hands out only what its caller could do itself: never a token for an admin
 * (unless TOKEN_EXCHANGE_ALLOW_ADMINS), never for a user holding a grant the caller lacks.
 * And a correctly signed token with malformed claims is a 401, not a 500.
 */
let env: TestPlatform
let exchanger: { id: string; token: string }

const GUEST_GRANTS = ['platform.agents/default/default.read:all', 'platform.agents/default/default.chat:all']
const exchange = (token: string, email: string, extra: Record<string, unknown> = {}) =>
  env.request('POST', '/auth/token/exchange', {
    token,
    body: { provider: 'corp-sso', subject: `s-${email}`, email, ...extra },
  })

t.before(async () => {
  env = await startTestPlatform(t)
  // a trusted identity provider: the exchange permission plus exactly what guests hold
  const grants = Object.fromEntries(['platform.auth.exchange:all', ...GUEST_GRANTS].map((g) => [g, true]))
  await env.sql("insert into roles (name, description, permissions) values ('Exchangers', 'identity provider', $1)", [
    JSON.stringify(grants),
  ])
  exchanger = await env.createUser('idp@test.local', ['Exchangers'])
})

t.test('exchange for the superadmin is refused', async (t) => {
  const res = await exchange(exchanger.token, 'admin@test.local')
  t.equal(res.status, 403)
  t.match(res.body, { code: 'auth.exchange_admin_target' })
  const byAdmin = await exchange(env.adminToken, 'admin@test.local')
  t.equal(byAdmin.status, 403, 'even by an admin holding platform.*:all')
  t.match(byAdmin.body, { code: 'auth.exchange_admin_target' })
})

t.test('exchange for another admin is refused unless TOKEN_EXCHANGE_ALLOW_ADMINS', async (t) => {
  await env.createUser('second-admin@test.local', ['Admins'])
  t.match((await exchange(env.adminToken, 'second-admin@test.local')).body, { code: 'auth.exchange_admin_target' })
  const allowing = await startTestPlatform(t, { TOKEN_EXCHANGE_ALLOW_ADMINS: 'true' })
  await allowing.createUser('second-admin@test.local', ['Admins'])
  const res = await allowing.request('POST', '/auth/token/exchange', {
    body: { provider: 'p', subject: 's', email: 'second-admin@test.local' },
  })
  t.equal(res.status, 200, res.text)
})

t.test('exchange for a user holding more permissions than the caller is refused', async (t) => {
  await env.createUser('wider@test.local', ['Users'])
  const res = await exchange(exchanger.token, 'wider@test.local')
  t.equal(res.status, 403)
  t.match(res.body, { code: 'auth.exchange_wider_than_caller' })
  t.match(
    (res.body as { detail: string }).detail,
    /platform\.functions\/\*\/\*\.execute:own/,
    'names what the caller lacks',
  )
  t.equal((await exchange(env.adminToken, 'wider@test.local')).status, 200, 'an admin covering every grant may')
})

t.test('exchange for a user the caller covers works, and auto-provisioning still works', async (t) => {
  await env.createUser('guest@test.local', ['GuestUsers'])
  const res = await exchange(exchanger.token, 'guest@test.local')
  t.equal(res.status, 200, res.text)
  t.match(res.body, { provisioned: false, user: { email: 'guest@test.local' } })
  const token = (res.body as { access_token: string }).access_token
  t.equal((await env.request('GET', '/auth/me', { token })).status, 200, 'the minted token works')

  const fresh = await exchange(exchanger.token, 'brand-new@test.local')
  t.equal(fresh.status, 200, fresh.text)
  t.match(fresh.body, { provisioned: true, user: { email: 'brand-new@test.local', roles: ['GuestUsers'] } })
})

t.test('a provisioning exchange refused by the rule creates nobody', async (t) => {
  const narrow = { 'platform.auth.exchange:all': true }
  await env.sql("insert into roles (name, description, permissions) values ('NarrowIdp', 'exchange only', $1)", [
    JSON.stringify(narrow),
  ])
  const idp = await env.createUser('narrow-idp@test.local', ['NarrowIdp'])
  const res = await exchange(idp.token, 'never-created@test.local')
  t.equal(res.status, 403, 'the default role (GuestUsers) holds grants this caller lacks')
  t.match(res.body, { code: 'auth.exchange_wider_than_caller' })
  t.same(await env.sql("select id from users where email = 'never-created@test.local'"), [])
})

t.test('a correctly signed token with malformed claims answers 401, not 500', async (t) => {
  const key = new TextEncoder().encode(SECRET_KEY)
  const sign = (claims: Record<string, unknown>, sub?: string) => {
    const jwt = new SignJWT({ type: 'access', ...claims })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuedAt()
      .setExpirationTime('5m')
    return (sub === undefined ? jwt : jwt.setSubject(sub)).sign(key)
  }
  const cases: [string, string][] = [
    ['sub not a UUID', await sign({ email: 'x@test.local' }, 'admin')],
    ['sub an email', await sign({ email: 'x@test.local' }, 'admin@test.local')],
    ['sub missing', await sign({ email: 'x@test.local' })],
    ['email not a string', await sign({ email: 42 }, env.adminId)],
    ['unknown scope', await sign({ email: 'x@test.local', scope: 'root' }, env.adminId)],
    ['execution scope without exe', await sign({ email: 'x@test.local', scope: 'execution', att: 1 }, env.adminId)],
    ['exe not a UUID', await sign({ email: 'x@test.local', scope: 'execution', exe: 'job-1', att: 1 }, env.adminId)],
    [
      'exe without the scope',
      await sign({ email: 'x@test.local', exe: '00000000-0000-4000-8000-000000000000', att: 1 }, env.adminId),
    ],
    ['sid (the login session) not a UUID', await sign({ email: 'x@test.local', sid: 'session-1' }, env.adminId)],
  ]
  for (const [name, token] of cases) {
    const res = await env.request('GET', '/auth/me', { token })
    t.equal(res.status, 401, name)
    t.match(res.body, { code: 'auth.invalid_token' }, `${name}: error body`)
  }
  // the service side refuses too, whatever handed it the caller
  const db = env.platform.db
  if (db === undefined) throw new Error('no database')
  await t.rejects(loadPrincipal(db, { sub: 'not-a-uuid', via: 'jwt' }), { status: 401, code: 'auth.invalid_token' })
})
