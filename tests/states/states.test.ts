import t from 'tap'
import { createStateService } from '../../src/states/service.ts'
import { eventually } from '../helpers/eventually.ts'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'

/*
 * Stores and their state entries over HTTP against real Postgres and NATS: CRUD, visibility and
 * sharing, expiry (never answered, then swept), search, schema validation, encryption at rest
 * (no plaintext in the row, ciphertext bound to store and key), the value size limit, keys,
 * other users' stores invisible, and the service API's read-only access.
 */
let env: TestPlatform
let a: { id: string; token: string }
let b: { id: string; token: string }
let c: { id: string; token: string }
type Entry = {
  id: string
  key: string
  value: unknown
  visibility: string
  owner_id: string
  tags: string[]
  description: string
  expires_at: string | null
  warnings?: unknown[]
}
type Res = { status: number; body: unknown; text: string; headers: Headers }

const req = (token: string, method: string, path: string, body?: unknown): Promise<Res> =>
  env.request(method, path, { token, ...(body === undefined ? {} : { body }) })
const mkStore = async (token: string, ns: string, name: string, spec: Record<string, unknown> = {}) => {
  const r = await req(token, 'POST', '/api/v1/stores', { namespace: ns, name, ...spec })
  if (r.status !== 201) throw new Error(`store ${ns}/${name}: ${r.text}`)
  return r.body as { id: string }
}
const keys = (r: Res) => (r.body as Entry[]).map((e) => e.key)

t.before(async () => {
  env = await startTestPlatform(t, { STATE_MAX_VALUE_BYTES: '1024', STATE_SWEEP_INTERVAL_SECONDS: '0.2' })
  a = await env.createUser('states-a@test.local')
  // B may use the states of A's store team/board (read and write), not of A's other stores
  const role = await env.request('POST', '/api/v1/roles', {
    body: {
      name: 'BoardUsers',
      permissions: {
        'platform.stores/team/board.read_state:all': true,
        'platform.stores/team/board.write_state:all': true,
      },
    },
  })
  if (role.status !== 201) throw new Error(role.text)
  b = await env.createUser('states-b@test.local', ['Users', 'BoardUsers'])
  c = await env.createUser('states-c@test.local')
  await mkStore(a.token, 'mine', 'notes')
  await mkStore(a.token, 'team', 'board', { default_visibility: 'shared' })
})

t.test("CRUD of entries in one's own store", async (t) => {
  const base = '/stores/mine/notes/states'
  const made = await req(a.token, 'POST', base, {
    key: 'greeting',
    value: { text: 'hi' },
    description: 'a greeting',
    tags: ['x'],
  })
  t.equal(made.status, 201, made.text)
  t.match(made.body, {
    key: 'greeting',
    value: { text: 'hi' },
    visibility: 'private',
    owner_id: a.id,
    store: 'mine/notes',
    tags: ['x'],
    description: 'a greeting',
    expires_at: null,
  })
  t.equal((await req(a.token, 'POST', base, { key: 'greeting', value: 2 })).status, 409, 'a key is created once')
  t.match((await req(a.token, 'GET', `${base}/greeting`)).body, { value: { text: 'hi' } })
  const changed = await req(a.token, 'PUT', `${base}/greeting`, { value: [1, 2, 3], tags: ['y', 'z'] })
  t.equal(changed.status, 200, changed.text)
  t.match(changed.body, { value: [1, 2, 3], tags: ['y', 'z'], description: 'a greeting' }, 'fields not given are kept')
  const upsert = await req(a.token, 'PUT', `${base}/fresh`, { value: null })
  t.equal(upsert.status, 201, 'PUT creates an absent key')
  t.equal((upsert.body as Entry).value, null, 'JSON null is a value')
  const noValue = await req(a.token, 'PUT', `${base}/absent`, { description: 'no value' })
  t.equal(noValue.status, 422, 'creating through PUT needs a value')
  t.equal((await req(a.token, 'DELETE', `${base}/greeting`)).status, 204)
  const gone = await req(a.token, 'GET', `${base}/greeting`)
  t.equal(gone.status, 404)
  t.match(gone.body, { code: 'state.not_found' })
  t.equal((await req(a.token, 'DELETE', `${base}/greeting`)).status, 404)
})

t.test('keys and bodies are validated', async (t) => {
  const base = '/stores/mine/notes/states'
  for (const key of ['a b', '.hidden', 'x'.repeat(201), '']) {
    const r = await req(a.token, 'POST', base, { key, value: 1 })
    t.equal(r.status, 422, `key ${JSON.stringify(key.slice(0, 10))} refused`)
  }
  t.equal((await req(a.token, 'GET', `${base}/.hidden`)).status, 422, 'a bad key in the path')
  t.equal((await req(a.token, 'POST', base, { key: 'k', value: 1, visibility: 'public' })).status, 422)
  t.equal((await req(a.token, 'POST', base, { key: 'k', value: 1, extra: true })).status, 422)
  t.equal((await req(a.token, 'POST', base, { key: 'k' })).status, 422, 'a value is required')
  t.equal((await req(a.token, 'POST', base, { key: 'ok-key_1.2:x@y', value: 1 })).status, 201)
})

t.test("other users: A's stores answer 404 to C; C uses its own store", async (t) => {
  await req(a.token, 'POST', '/stores/mine/notes/states', { key: 'shared-one', value: 1, visibility: 'shared' })
  for (const [method, path, body] of [
    ['GET', '/stores/mine/notes/states'],
    ['GET', '/stores/mine/notes/states/shared-one'],
    ['POST', '/stores/mine/notes/states', { key: 'c', value: 1 }],
    ['PUT', '/stores/mine/notes/states/shared-one', { value: 2 }],
    ['DELETE', '/stores/mine/notes/states/shared-one'],
  ] as const) {
    const r = await req(c.token, method, path, body)
    t.equal(r.status, 404, `${method} ${path}`)
    t.match(r.body, { code: 'store.not_found' })
  }
  t.equal((await req(c.token, 'GET', '/stores/mine/nothing/states')).status, 404, 'a missing store answers the same')
  await mkStore(c.token, 'cee', 'own')
  t.equal(
    (await req(c.token, 'POST', '/stores/cee/own/states', { key: 'k', value: 'mine' })).status,
    201,
    'the Users role writes its own stores',
  )
  t.equal((await req(a.token, 'GET', '/stores/cee/own/states/k')).status, 404, 'and A cannot read it')
  t.equal((await req(b.token, 'GET', '/stores/mine/notes/states')).status, 404, 'B holds grants on team/board only')
})

t.test(
  "visibility: shared entries for everyone with access, private ones for their owner and the store's managers",
  async (t) => {
    const base = '/stores/team/board/states'
    t.match(
      (await req(a.token, 'POST', base, { key: 'a-note', value: 'for all' })).body,
      { visibility: 'shared' },
      'the store default',
    )
    await req(a.token, 'POST', base, { key: 'a-secret', value: 'for A', visibility: 'private' })
    const own = await req(b.token, 'POST', base, { key: 'b-secret', value: 'for B', visibility: 'private' })
    t.equal(own.status, 201, 'B writes its own entries')
    t.same(keys(await req(b.token, 'GET', base)), ['a-note', 'b-secret'], 'B sees shared entries and its own')
    t.same(
      keys(await req(a.token, 'GET', base)),
      ['a-note', 'a-secret', 'b-secret'],
      'A manages the store: every entry',
    )
    t.same(keys(await req(env.adminToken, 'GET', base)), ['a-note', 'a-secret', 'b-secret'], 'so does the admin')
    t.equal((await req(b.token, 'GET', `${base}/a-secret`)).status, 404, 'a private entry of A is invisible to B')
    const taken = await req(b.token, 'PUT', `${base}/a-secret`, { value: 'mine now' })
    t.equal(taken.status, 409, 'its key is taken: B cannot overwrite it')
    t.match(taken.body, { code: 'state.exists' })
    t.notMatch(taken.text, /for A/, 'and learns nothing of its value')
    const readOnly = await req(b.token, 'PUT', `${base}/a-note`, { value: 'changed' })
    t.equal(readOnly.status, 403, 'a shared entry of A is read-only for B')
    t.match(readOnly.body, { code: 'state.forbidden' })
    t.equal((await req(b.token, 'DELETE', `${base}/a-note`)).status, 403)
    t.equal(
      (await req(a.token, 'PUT', `${base}/b-secret`, { value: 'seen by the manager' })).status,
      200,
      'the manager changes any entry',
    )
    t.match(
      (await req(b.token, 'GET', `${base}/b-secret`)).body,
      { value: 'seen by the manager', owner_id: b.id },
      'the owner stays',
    )
  },
)

t.test('search by key prefix, tags and owner; paging with X-Total-Count', async (t) => {
  await mkStore(a.token, 'mine', 'search')
  const base = '/stores/mine/search/states'
  for (const [key, tags] of [
    ['user:1:name', ['profile']],
    ['user:1:email', ['profile', 'contact']],
    ['user:2:name', ['profile']],
    ['order:9', ['contact']],
  ] as const) {
    t.equal((await req(a.token, 'POST', base, { key, value: key, tags, visibility: 'shared' })).status, 201)
  }
  t.same(keys(await req(a.token, 'GET', `${base}?search=user:1:`)), ['user:1:email', 'user:1:name'])
  t.same(keys(await req(a.token, 'GET', `${base}?search=user_`)), [], 'the prefix is literal (_ is no wildcard)')
  t.same(keys(await req(a.token, 'GET', `${base}?tags=contact`)), ['order:9', 'user:1:email'])
  t.same(keys(await req(a.token, 'GET', `${base}?tags=profile,contact`)), ['user:1:email'], 'every tag must match')
  t.same(keys(await req(a.token, 'GET', `${base}?owner=me&search=order`)), ['order:9'])
  t.same(keys(await req(a.token, 'GET', `${base}?owner=${b.id}`)), [])
  const page = await req(a.token, 'GET', `${base}?limit=2&offset=1`)
  t.same(keys(page), ['user:1:email', 'user:1:name'])
  t.equal(page.headers.get('x-total-count'), '4')
  const beyond = await req(a.token, 'GET', `${base}?limit=2&offset=10`)
  t.same(keys(beyond), [])
  t.equal(beyond.headers.get('x-total-count'), '4', 'the total also past the end')
  t.equal((await req(a.token, 'GET', `${base}?owner=nobody`)).status, 422)
})

t.test('expiry: an expired entry is never answered, its key is free again, and the sweep deletes it', async (t) => {
  const base = '/stores/mine/notes/states'
  const past = await req(a.token, 'POST', base, {
    key: 'late',
    value: 1,
    expires_at: new Date(Date.now() - 1000).toISOString(),
  })
  t.equal(past.status, 422, 'expires_at must lie in the future')
  const soon = new Date(Date.now() + 3_600_000).toISOString()
  const made = await req(a.token, 'POST', base, { key: 'temp', value: 'v1', expires_at: soon })
  t.equal(made.status, 201, made.text)
  t.equal((made.body as Entry).expires_at, soon)
  t.equal((await req(a.token, 'GET', `${base}/temp`)).status, 200, 'live (and now held in memory)')
  // time passes: the row's expiry moved into the past (the sweep may not have run yet)
  await env.sql(`update states set expires_at = now() - interval '1 second' where key = 'temp'`)
  t.equal((await req(a.token, 'GET', `${base}/temp`)).status, 404, 'expired: not answered')
  t.notOk(keys(await req(a.token, 'GET', base)).includes('temp'), 'nor listed')
  t.equal((await req(a.token, 'DELETE', `${base}/temp`)).status, 404, 'nor deleted')
  t.equal(
    (await req(a.token, 'PUT', `${base}/temp`, { description: 'x' })).status,
    422,
    'it is absent: PUT would create it and needs a value',
  )
  const again = await req(a.token, 'POST', base, { key: 'temp', value: 'v2' })
  t.equal(again.status, 201, 'the key of an expired entry can be created again')
  t.match(again.body, { value: 'v2', expires_at: null })
  await req(a.token, 'POST', base, { key: 'swept', value: 1, expires_at: soon })
  await env.sql(`update states set expires_at = now() - interval '1 second' where key = 'swept'`)
  await eventually(
    async () => ((await env.sql(`select 1 from states where key = 'swept'`)).length === 0 ? true : undefined),
    'the sweep to delete the expired row',
  )
  t.pass('swept')
  const cleared = await req(a.token, 'PUT', `${base}/temp`, { expires_at: soon })
  t.equal((cleared.body as Entry).expires_at, soon, 'PUT sets an expiry')
  t.equal(
    ((await req(a.token, 'PUT', `${base}/temp`, { expires_at: null })).body as Entry).expires_at,
    null,
    'and null clears it',
  )
})

t.test('a store schema: strict stores refuse values that do not match, others accept them with warnings', async (t) => {
  const schema = { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }
  await mkStore(a.token, 'mine', 'typed', { schema })
  await mkStore(a.token, 'mine', 'loose', { schema, strict: false })
  const bad = await req(a.token, 'POST', '/stores/mine/typed/states', { key: 'k', value: { text: 5 } })
  t.equal(bad.status, 422)
  t.match(bad.body, { code: 'state.invalid_value', errors: [{ path: '/value/text' }] })
  t.equal((await req(a.token, 'GET', '/stores/mine/typed/states/k')).status, 404, 'nothing was stored')
  t.equal((await req(a.token, 'POST', '/stores/mine/typed/states', { key: 'k', value: { text: 'ok' } })).status, 201)
  t.equal((await req(a.token, 'PUT', '/stores/mine/typed/states/k', { value: {} })).status, 422, 'PUT is checked too')
  const loose = await req(a.token, 'POST', '/stores/mine/loose/states', { key: 'k', value: 7 })
  t.equal(loose.status, 201)
  t.match(loose.body, { value: 7, warnings: [{ path: '/value' }] })
  const broken = await req(a.token, 'POST', '/api/v1/stores', {
    namespace: 'mine',
    name: 'broken',
    schema: { type: 'no-such-type' },
  })
  t.equal(broken.status, 422, 'a schema that does not compile is refused with the store')
})

t.test('encryption at rest: the row holds no plaintext, the ciphertext is bound to its store and key', async (t) => {
  const store = await mkStore(a.token, 'mine', 'vault', { encrypted: true })
  const marker = 'plaintext-marker-7f3a'
  const made = await req(a.token, 'POST', '/stores/mine/vault/states', {
    key: 'card',
    value: { number: marker },
    tags: ['pay'],
  })
  t.equal(made.status, 201, made.text)
  t.match(made.body, { value: { number: marker } })
  const [row] = await env.sql<{ value: unknown; value_sealed: string }>(
    `select value, value_sealed from states where store_id = $1 and key = 'card'`,
    [store.id],
  )
  t.equal(row?.value, null, 'no clear value')
  t.match(row?.value_sealed, /^v1:/)
  t.notMatch(row?.value_sealed ?? '', /plaintext-marker/, 'no plaintext in the row')
  const all = await env.sql<{ t: string }>(`select s::text as t from states s where store_id = $1`, [store.id])
  t.notMatch(all.map((r) => r.t).join('\n'), new RegExp(marker), 'nowhere in the row')
  t.match(
    (await req(a.token, 'GET', '/stores/mine/vault/states/card')).body,
    { value: { number: marker } },
    'read back in clear',
  )
  t.match((await req(a.token, 'PUT', '/stores/mine/vault/states/card', { value: { number: 'two' } })).body, {
    value: { number: 'two' },
  })
  // a ciphertext copied under another key does not decrypt
  await req(a.token, 'POST', '/stores/mine/vault/states', { key: 'other', value: 'x' })
  await env.sql(
    `update states set value_sealed = (select value_sealed from states where store_id = $1 and key = 'card') where store_id = $1 and key = 'other'`,
    [store.id],
  )
  const copied = await req(a.token, 'GET', '/stores/mine/vault/states/other')
  t.equal(copied.status, 500)
  t.match(copied.body, { code: 'secrets.undecryptable' })
})

t.test('value size: STATE_MAX_VALUE_BYTES (1024 here) answers 413', async (t) => {
  const big = await req(a.token, 'POST', '/stores/mine/notes/states', { key: 'big', value: 'x'.repeat(1100) })
  t.equal(big.status, 413)
  t.match(big.body, { code: 'state.too_large' })
  t.equal(
    (await req(a.token, 'POST', '/stores/mine/notes/states', { key: 'big', value: 'x'.repeat(1000) })).status,
    201,
    'within the limit',
  )
  t.equal(
    (await req(a.token, 'PUT', '/stores/mine/notes/states/big', { value: 'x'.repeat(1100) })).status,
    413,
    'PUT too',
  )
})

t.test('inactive and deleted stores', async (t) => {
  await mkStore(a.token, 'mine', 'brief')
  await req(a.token, 'POST', '/stores/mine/brief/states', { key: 'k', value: 1 })
  await req(a.token, 'PUT', '/api/v1/stores/mine/brief', { is_active: false })
  t.equal((await req(a.token, 'GET', '/stores/mine/brief/states/k')).status, 404, 'an inactive store serves no states')
  await req(a.token, 'PUT', '/api/v1/stores/mine/brief', { is_active: true })
  t.equal((await req(a.token, 'GET', '/stores/mine/brief/states/k')).status, 200)
  t.equal((await req(a.token, 'DELETE', '/api/v1/stores/mine/brief')).status, 204)
  t.equal(
    (await env.sql(`select 1 from states where key = 'k' and store_id not in (select id from resources)`)).length,
    0,
    'its entries went with it',
  )
})

t.test('the service API: as a principal, and read-only through an enabled_stores entry', async (t) => {
  const platform = env.platform
  if (platform.db === undefined || platform.resources === undefined) throw new Error('no service role')
  const states = createStateService({ db: platform.db, config: env.config, resources: platform.resources })
  const asA = {
    userId: a.id,
    email: 'states-a@test.local',
    permissions: [
      'platform.stores/*/*.read_state:own',
      'platform.stores/*/*.write_state:own',
      'platform.stores/*/*.update:own',
      'platform.stores/*/*.read:own',
    ],
  }
  const store = { namespace: 'mine', name: 'notes' }
  const { entry, created } = await states.put(asA, store, 'svc', { value: { n: 1 } })
  t.ok(created)
  t.equal(entry.owner_id, a.id)
  t.match(await states.get(asA, store, 'svc'), { value: { n: 1 } })
  await t.rejects(
    states.put(asA, store, 'svc', { value: 2 }, { access: 'readonly' }),
    { code: 'state.readonly' },
    'a readonly entry refuses writes',
  )
  await t.rejects(states.remove(asA, store, 'svc', { access: 'readonly' }), { code: 'state.readonly' })
  await t.rejects(
    states.put(asA, store, 'bad key', { value: 1 }),
    { code: 'request.invalid' },
    'keys are checked without the gateway',
  )
  await t.rejects(
    states.create(asA, store, { key: 'x', value: 1, tags: [42] as unknown as string[] }),
    { code: 'request.invalid' },
    'and bodies',
  )
  const noPerms = { userId: a.id, email: 'x', permissions: [] }
  await t.rejects(
    states.get(noPerms, store, 'svc'),
    { code: 'store.not_found' },
    'permissions come from the principal given',
  )
  t.same(await states.access(asA, store), { read: true, write: true })
  t.equal(await states.access(noPerms, store), null)
})
