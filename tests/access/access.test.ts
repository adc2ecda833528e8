import { connect } from '@nats-io/transport-node'
import t from 'tap'
import { createPrincipalCache } from '../../src/auth/principal-cache.ts'
import { hashApiKey } from '../../src/auth/api-key-format.ts'
import { Kvm } from '@nats-io/kv'
import { natsNames } from '../../src/platform/nats-names.ts'
import { sql } from '../../src/platform/db.ts'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * Users, roles and API keys through the gateway, and the AUTH_CACHE bucket: invalidation on every
 * change, and a revocation seen by another NATS connection at once.
 */
const env = await startTestPlatform(t)
const a = await env.createUser('a@test.local')
const b = await env.createUser('b@test.local')
type Key = { id: string; key: string; key_prefix: string; permissions: Record<string, boolean> }

t.test('users: admin manages everyone, a user sees only itself', async (t) => {
  const created = await env.request('POST', '/api/v1/users', { body: { email: 'New@Test.local' } })
  t.equal(created.status, 201)
  const user = created.body as { id: string; email: string; roles: string[]; is_active: boolean }
  t.same([user.email, user.roles, user.is_active], ['new@test.local', ['Users'], true])
  t.equal((await env.request('POST', '/api/v1/users', { body: { email: 'new@test.local' } })).status, 409)
  t.equal(
    (await env.request('POST', '/api/v1/users', { body: { email: 'x@test.local', roles: ['Nope'] } })).status,
    422,
  )
  const all = await env.request('GET', '/api/v1/users')
  t.ok((all.body as { id: string }[]).length >= 4)
  const mine = await env.request('GET', '/api/v1/users', { token: a.token })
  t.same(
    (mine.body as { id: string }[]).map((u) => u.id),
    [a.id],
    'a user lists only itself',
  )
  t.equal((await env.request('GET', `/api/v1/users/${a.id}`, { token: a.token })).status, 200)
  t.equal(
    (await env.request('GET', `/api/v1/users/${b.id}`, { token: a.token })).status,
    404,
    'another user is not visible',
  )
  t.equal(
    (await env.request('PATCH', `/api/v1/users/${b.id}`, { token: a.token, body: { is_active: false } })).status,
    404,
  )
  t.equal(
    (await env.request('PATCH', `/api/v1/users/${a.id}`, { token: a.token, body: { roles: ['Admins'] } })).status,
    403,
    'no self-promotion',
  )
  t.equal((await env.request('POST', '/api/v1/users', { token: a.token, body: { email: 'y@test.local' } })).status, 403)
  const upd = await env.request('PATCH', `/api/v1/users/${user.id}`, {
    body: { roles: ['GuestUsers'], email: 'renamed@test.local' },
  })
  t.same(
    [(upd.body as { roles: string[] }).roles, (upd.body as { email: string }).email],
    [['GuestUsers'], 'renamed@test.local'],
  )
  t.equal((await env.request('DELETE', `/api/v1/users/${user.id}`)).status, 204)
  t.equal((await env.request('GET', `/api/v1/users/${user.id}`)).status, 404)
})

t.test('deactivating a user stops its token on the next request (cache invalidated)', async (t) => {
  const c = await env.createUser('c@test.local')
  t.equal((await env.request('GET', '/api/v1/agents', { token: c.token })).status, 200, 'warms the cache')
  t.equal((await env.request('PATCH', `/api/v1/users/${c.id}`, { body: { is_active: false } })).status, 200)
  t.equal((await env.request('GET', '/api/v1/agents', { token: c.token })).status, 401)
  t.equal((await env.request('PATCH', `/api/v1/users/${c.id}`, { body: { is_active: true } })).status, 200)
  t.equal((await env.request('GET', '/api/v1/agents', { token: c.token })).status, 200)
})

t.test('roles: CRUD, grammar checked, membership and grants take effect at once', async (t) => {
  const skillRead = 'platform.skills/*/*.read:all'
  t.equal(
    (await env.request('POST', '/api/v1/roles', { body: { name: 'Bad', permissions: { 'not a permission': true } } }))
      .status,
    422,
  )
  t.equal(
    (await env.request('POST', '/api/v1/roles', { token: a.token, body: { name: 'Mine' } })).status,
    403,
    'roles are admin-only',
  )
  t.equal((await env.request('GET', '/api/v1/roles', { token: a.token })).status, 403)
  const created = await env.request('POST', '/api/v1/roles', {
    body: { name: 'SkillReaders', description: 'read all skills', permissions: { [skillRead]: true } },
  })
  t.equal(created.status, 201)
  t.equal((await env.request('POST', '/api/v1/roles', { body: { name: 'SkillReaders' } })).status, 409)
  const names = ((await env.request('GET', '/api/v1/roles')).body as { name: string }[]).map((r) => r.name)
  t.ok(
    ['Admins', 'Users', 'GuestUsers', 'SkillReaders'].every((n) => names.includes(n)),
    'default roles present',
  )

  const skill = await env.request('POST', '/api/v1/skills', {
    body: { namespace: 'team', name: 'style', description: 'd', content: '# x' },
  })
  t.equal(skill.status, 201)
  t.equal(
    (await env.request('GET', '/api/v1/skills/team/style', { token: b.token })).status,
    404,
    'not visible before the role',
  )
  const added = await env.request('POST', `/api/v1/roles/SkillReaders/users/${b.id}`)
  t.same((added.body as { users: string[] }).users, [b.id])
  t.equal(
    (await env.request('GET', '/api/v1/skills/team/style', { token: b.token })).status,
    200,
    'visible right after joining',
  )
  t.equal(
    (
      await env.request('PATCH', '/api/v1/roles/SkillReaders', {
        body: { permissions: { 'platform.skills/*/*.read:own': true } },
      })
    ).status,
    200,
  )
  t.equal(
    (await env.request('GET', '/api/v1/skills/team/style', { token: b.token })).status,
    404,
    'grant narrowed: gone at once',
  )
  t.equal(
    (await env.request('PATCH', '/api/v1/roles/SkillReaders', { body: { permissions: { [skillRead]: true } } })).status,
    200,
  )
  t.equal((await env.request('GET', '/api/v1/skills/team/style', { token: b.token })).status, 200)
  t.equal((await env.request('DELETE', `/api/v1/roles/SkillReaders/users/${b.id}`)).status, 200)
  t.equal(
    (await env.request('GET', '/api/v1/skills/team/style', { token: b.token })).status,
    404,
    'removed from the role: gone at once',
  )
  await env.request('POST', `/api/v1/roles/SkillReaders/users/${b.id}`)
  t.equal((await env.request('DELETE', '/api/v1/roles/SkillReaders')).status, 204)
  t.equal(
    (await env.request('GET', '/api/v1/skills/team/style', { token: b.token })).status,
    404,
    'role deleted: gone at once',
  )
  t.equal((await env.request('GET', '/api/v1/roles/SkillReaders')).status, 404)
})

t.test('api keys: minted once, hashed, bounded by the owner, both headers', async (t) => {
  const wider = await env.request('POST', '/api/v1/api-keys', {
    token: a.token,
    body: { name: 'too wide', permissions: { 'platform.*:all': true } },
  })
  t.equal(wider.status, 403)
  t.equal((wider.body as { code: string }).code, 'api_key.wider_than_owner')
  t.equal(
    (
      await env.request('POST', '/api/v1/api-keys', {
        token: a.token,
        body: { name: 'bad', permissions: { nope: true } },
      })
    ).status,
    422,
  )

  const res = await env.request('POST', '/api/v1/api-keys', {
    token: a.token,
    body: { name: 'ci', permissions: { 'platform.skills/*/*.read:own': true, 'platform.skills/*/*.create:own': true } },
  })
  t.equal(res.status, 201)
  const key = res.body as Key
  t.match(key.key, /^apk_/)
  t.ok(key.key.startsWith(key.key_prefix))
  const [row] = await env.sql<{ key_hash: string }>('select key_hash from api_keys where id = $1', [key.id])
  t.equal(row?.key_hash, hashApiKey(key.key), 'only the hash is stored')
  t.notOk(
    JSON.stringify(await env.sql('select * from api_keys')).includes(key.key),
    'the key itself is nowhere in the table',
  )
  t.notOk(
    'key' in ((await env.request('GET', `/api/v1/api-keys/${key.id}`, { token: a.token })).body as object),
    'shown once',
  )

  const viaBearer = await env.request('POST', '/api/v1/skills', {
    token: key.key,
    body: { namespace: 'a', name: 'k1', description: 'd', content: 'c' },
  })
  t.equal(viaBearer.status, 201, 'Authorization: Bearer <key>')
  const viaHeader = await env.request('GET', '/api/v1/skills/a/k1', { token: null, headers: { 'x-api-key': key.key } })
  t.equal(viaHeader.status, 200, 'X-API-Key')
  t.equal((await env.request('GET', '/api/v1/agents', { token: key.key })).status, 200)
  t.same(
    (await env.request('GET', '/api/v1/agents', { token: key.key })).body,
    [],
    "the key does not carry the owner's agent grants",
  )
  t.equal(
    (
      await env.request('POST', '/api/v1/agents', {
        token: key.key,
        body: { namespace: 'a', name: 'x', system_prompt: 'p' },
      })
    ).status,
    403,
    'outside the key',
  )
  t.equal((await env.request('GET', '/api/v1/skills', { token: 'apk_unknown' })).status, 401)

  // intersection: the owner loses skill creation → the key loses it too, without touching the key
  await env.request('POST', '/api/v1/roles', {
    body: { name: 'ReadSkillsOnly', permissions: { 'platform.skills/*/*.read:own': true } },
  })
  await env.request('PATCH', `/api/v1/users/${a.id}`, { body: { roles: ['ReadSkillsOnly'] } })
  t.equal(
    (
      await env.request('POST', '/api/v1/skills', {
        token: key.key,
        body: { namespace: 'a', name: 'k2', description: 'd', content: 'c' },
      })
    ).status,
    403,
    'key ∩ owner',
  )
  t.equal((await env.request('GET', '/api/v1/skills/a/k1', { token: key.key })).status, 200)
  await env.request('PATCH', `/api/v1/users/${a.id}`, { body: { roles: ['Users'] } })

  // visibility: B and the admin
  t.equal((await env.request('GET', `/api/v1/api-keys/${key.id}`, { token: b.token })).status, 404)
  t.equal((await env.request('DELETE', `/api/v1/api-keys/${key.id}`, { token: b.token })).status, 404)
  t.same(((await env.request('GET', '/api/v1/api-keys', { token: b.token })).body as unknown[]).length, 0)
  t.ok(
    ((await env.request('GET', '/api/v1/api-keys')).body as { id: string }[]).some((k) => k.id === key.id),
    'admin lists every key',
  )

  t.equal((await env.request('DELETE', `/api/v1/api-keys/${key.id}`, { token: a.token })).status, 204)
  t.equal(
    (await env.request('GET', '/api/v1/skills/a/k1', { token: key.key })).status,
    401,
    'deleted key stops at once',
  )
})

t.test('api keys: expired keys stop working', async (t) => {
  const past = await env.request('POST', '/api/v1/api-keys', {
    token: a.token,
    body: { name: 'old', permissions: {}, expires_at: '2000-01-01T00:00:00Z' },
  })
  t.equal(past.status, 422)
  const soon = new Date(Date.now() + 1500).toISOString()
  const key = (
    await env.request('POST', '/api/v1/api-keys', {
      token: a.token,
      body: { name: 'short', permissions: { 'platform.skills/*/*.read:own': true }, expires_at: soon },
    })
  ).body as Key
  t.equal((await env.request('GET', '/api/v1/skills', { token: key.key })).status, 200)
  await new Promise((r) => setTimeout(r, 1600))
  const after = await env.request('GET', '/api/v1/skills', { token: key.key })
  t.equal(after.status, 401)
  t.equal((after.body as { code: string }).code, 'auth.api_key_expired')
})

t.test('the warm path reads no table, and a revocation through another NATS connection is seen at once', async (t) => {
  const key = (
    await env.request('POST', '/api/v1/api-keys', {
      token: a.token,
      body: { name: 'kv', permissions: { 'platform.skills/*/*.read:own': true } },
    })
  ).body as Key
  t.equal((await env.request('GET', '/api/v1/skills', { token: key.key })).status, 200, 'warms the cache')
  // Remove the row behind the cache's back: the key still works, so requests are not reading Postgres.
  await env.sql('delete from api_keys where id = $1', [key.id], { behindTheBack: true })
  t.equal(
    (await env.request('GET', '/api/v1/skills', { token: key.key })).status,
    200,
    'served from the cache (memory, then AUTH_CACHE)',
  )
  // Another process (here: another connection) invalidates; the platform sees it on the next request.
  const nc = await connect({ servers: env.platform.natsUrl })
  t.teardown(() => nc.close())
  const other = createPrincipalCache(
    await new Kvm(nc).open(natsNames(env.config.NATS_PREFIX).bucket('AUTH_CACHE')),
    undefined,
    { nc, names: natsNames(env.config.NATS_PREFIX) },
  )
  await other.invalidateKeys([hashApiKey(key.key)])
  t.equal((await env.request('GET', '/api/v1/skills', { token: key.key })).status, 401, 'revoked everywhere at once')
  t.equal(await other.key(hashApiKey(key.key), async () => null), null)
})

t.test(
  'a stored role or key that does not match its API shape answers 500 internal, never a wrong value (typed rows)',
  async (t) => {
    const db = env.platform.db
    if (db === undefined) throw new Error('no database')
    const role = await env.request('POST', '/api/v1/roles', {
      body: { name: 'Corrupted', permissions: { 'platform.skills.read:all': true } },
    })
    t.equal(role.status, 201)
    const key = await env.request('POST', '/api/v1/api-keys', {
      body: { name: 'corrupted', permissions: { 'platform.skills.read:all': true } },
    })
    t.equal(key.status, 201)
    const keyId = (key.body as Key).id
    // grants are `{permission: true}`; a string value is what a bad migration or hand edit would leave
    await db.query(
      sql.unsafe`update roles set permissions = '{"platform.skills.read:all": "yes"}'::jsonb where name = 'Corrupted'`,
    )
    await db.query(
      sql.unsafe`update api_keys set permissions = '{"platform.skills.read:all": "yes"}'::jsonb where id = ${keyId}::uuid`,
    )
    const badRole = await env.request('GET', '/api/v1/roles/Corrupted')
    t.same([badRole.status, (badRole.body as { code: string }).code], [500, 'internal'])
    const badKey = await env.request('GET', `/api/v1/api-keys/${keyId}`)
    t.same([badKey.status, (badKey.body as { code: string }).code], [500, 'internal'])
    await db.query(
      sql.unsafe`update api_keys set permissions = '{"platform.skills.read:all": true}'::jsonb where id = ${keyId}::uuid`,
    )
    t.equal((await env.request('GET', `/api/v1/api-keys/${keyId}`)).status, 200, 'the repaired key reads again')
    t.equal((await env.request('DELETE', `/api/v1/api-keys/${keyId}`)).status, 204)
    t.equal((await env.request('DELETE', '/api/v1/roles/Corrupted')).status, 204)
  },
)
