import t from 'tap'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * Manifests and discovery through HTTP: status ready / not ready for
 * the caller, B's 404 on A's manifest, discovery filtered by X-Application / ?app=. Store
 * dependencies with a `key` go through the states feature's real probe (registered by its service
 * part), against stores and entries written over HTTP.
 */
const env = await startTestPlatform(t)
const a = await env.createUser('mf-a@test.local')
const b = await env.createUser('mf-b@test.local')

const req = (token: string) => (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
  env.request(method, path, {
    token,
    ...(body === undefined ? {} : { body }),
    ...(headers === undefined ? {} : { headers }),
  })
const asA = req(a.token)
const asB = req(b.token)
const asAdmin = req(env.adminToken)

async function ok(
  res: Promise<{ status: number; text: string; body: unknown }>,
  status = 201,
): Promise<Record<string, unknown>> {
  const r = await res
  if (r.status !== status) throw new Error(`${String(r.status)} ${r.text}`)
  return r.body as Record<string, unknown>
}

await ok(asA('POST', '/api/v1/agents', { namespace: 'desk', name: 'helper', system_prompt: 'You help.' }))
await ok(asAdmin('POST', '/api/v1/agents', { namespace: 'private', name: 'secret-agent', system_prompt: 'No.' }))

t.test('manifest fields are checked when saved', async (t) => {
  const bad = await asA('POST', '/api/v1/manifests', {
    namespace: 'desk',
    name: 'bad',
    required_permissions: ['platform.agents/desk/helper.chat'],
  })
  t.equal(bad.status, 422, bad.text)
  t.ok(
    (bad.body as { errors: { path: string }[] }).errors.some((e) => e.path === '/required_permissions/0'),
    bad.text,
  )
  t.equal(
    (
      await asA('POST', '/api/v1/manifests', {
        namespace: 'desk',
        name: 'bad',
        store_dependencies: [{ store: 'no-slash' }],
      })
    ).status,
    422,
  )
  t.equal(
    (
      await asA('POST', '/api/v1/manifests', {
        namespace: 'desk',
        name: 'bad',
        exposed_namespaces: { agents: ['Bad NS'] },
      })
    ).status,
    422,
  )
  t.equal(
    (
      await asA('POST', '/api/v1/manifests', {
        namespace: 'desk',
        name: 'bad',
        required_resources: [{ type: 'agent', name: 'x', extra: 1 }],
      })
    ).status,
    422,
  )
})

t.test('status: ready when everything is there for the caller', async (t) => {
  await ok(
    asA('POST', '/api/v1/manifests', {
      namespace: 'desk',
      name: 'ready',
      required_resources: [
        { type: 'agent', namespace: 'desk', name: 'helper' },
        { type: 'agents', namespace: 'default', name: 'default' },
      ],
      required_permissions: ['platform.agents/desk/helper.chat:own'],
      optional_permissions: ['platform.system.read:all'],
    }),
  )
  for (const path of ['/api/runtime/manifests/desk/ready/status', '/manifests/desk/ready/status']) {
    const res = await asA('GET', path)
    t.equal(res.status, 200, res.text)
    t.same(
      res.body,
      {
        ready: true,
        resources: {
          satisfied: [
            { type: 'agent', namespace: 'desk', name: 'helper', exists: true },
            { type: 'agents', namespace: 'default', name: 'default', exists: true },
          ],
          missing: [],
        },
        permissions: {
          required: { granted: ['platform.agents/desk/helper.chat:own'], missing: [] },
          optional: { granted: [], missing: ['platform.system.read:all'] },
        },
        stores: { satisfied: [], missing: [] },
      },
      path,
    )
  }
})

t.test('status: not ready, with what is missing', async (t) => {
  await ok(
    asA('POST', '/api/v1/manifests', {
      namespace: 'desk',
      name: 'wanting',
      required_resources: [
        { type: 'agent', namespace: 'desk', name: 'helper' },
        { type: 'agent', namespace: 'desk', name: 'nobody' },
        { type: 'agent', namespace: 'private', name: 'secret-agent' },
        { type: 'gadget', namespace: 'desk', name: 'x' },
        { type: 'collection', namespace: 'kb', name: 'manuals' },
      ],
      required_permissions: ['platform.agents/desk/helper.read:own', 'platform.system.update:all'],
      store_dependencies: [{ store: 'desk/prefs' }, { store: 'desk/memory', key: 'profile' }],
    }),
  )
  const res = await asA('GET', '/api/runtime/manifests/desk/wanting/status')
  t.equal(res.status, 200, res.text)
  const s = res.body as {
    ready: boolean
    resources: { satisfied: { name: string }[]; missing: { name: string; exists: boolean }[] }
    permissions: { required: { granted: string[]; missing: string[] } }
    stores: {
      satisfied: unknown[]
      missing: { store: string; key: string | null; exists: boolean; key_checked: boolean }[]
    }
  }
  t.equal(s.ready, false)
  t.same(
    s.resources.satisfied.map((r) => r.name),
    ['helper'],
  )
  t.same(
    s.resources.missing.map((r) => r.name),
    ['nobody', 'secret-agent', 'x', 'manuals'],
    "absent, another user's private agent, an unknown type, a collection that does not exist (yet)",
  )
  t.ok(s.resources.missing.every((r) => !r.exists))
  t.same(s.permissions.required, {
    granted: ['platform.agents/desk/helper.read:own'],
    missing: ['platform.system.update:all'],
  })
  t.same(
    s.stores.missing,
    [
      { store: 'desk/prefs', key: null, exists: false, key_checked: false },
      { store: 'desk/memory', key: 'profile', exists: false, key_checked: false },
    ],
    'neither store exists yet: both dependencies are missing, keys unchecked',
  )
  // the admin sees the private agent and holds every permission: the same manifest reads differently
  const admin = (await asAdmin('GET', '/api/runtime/manifests/desk/wanting/status')).body as typeof s
  t.same(
    admin.resources.missing.map((r) => r.name),
    ['nobody', 'x', 'manuals'],
  )
  t.same(admin.permissions.required.missing, [])

  // an inactive required resource is not satisfied
  await ok(asA('PUT', '/api/v1/agents/desk/helper', { is_active: false }), 200)
  const off = (await asA('GET', '/api/runtime/manifests/desk/ready/status')).body as typeof s
  t.equal(off.ready, false)
  t.same(
    off.resources.missing.map((r) => r.name),
    ['helper'],
  )
  await ok(asA('PUT', '/api/v1/agents/desk/helper', { is_active: true }), 200)
})

t.test("B gets 404 on A's manifest and its status", async (t) => {
  for (const path of [
    '/api/runtime/manifests/desk/ready/status',
    '/manifests/desk/ready/status',
    '/api/v1/manifests/desk/ready',
  ]) {
    const res = await asB('GET', path)
    t.equal(res.status, 404, `${path}: ${res.text}`)
  }
  t.equal((await asB('PUT', '/api/v1/manifests/desk/ready', { description: 'mine' })).status, 404)
  t.equal((await asB('DELETE', '/api/v1/manifests/desk/ready')).status, 404)
  t.equal((await asAdmin('GET', '/manifests/desk/ready/status')).status, 200)
  t.equal((await asA('GET', '/manifests/desk/none/status')).status, 404)
})

t.test('discovery: what the caller can see, narrowed by X-Application / ?app=', async (t) => {
  await ok(asA('POST', '/api/v1/templates', { namespace: 'desk', name: 'reply', html_content: 'x' }))
  await ok(asA('POST', '/api/v1/templates', { namespace: 'desk-internal', name: 'memo', html_content: 'x' }))
  await ok(asA('POST', '/api/v1/templates', { namespace: 'desk', name: 'old', html_content: 'x', is_active: false }))
  await ok(asA('POST', '/api/v1/skills', { namespace: 'desk', name: 'tone', content: 'Be kind.' }))
  await ok(
    asA('POST', '/api/v1/manifests', {
      namespace: 'desk',
      name: 'app',
      exposed_namespaces: { templates: ['desk'], agents: ['*'] },
    }),
  )
  const names = (res: { body: unknown }) =>
    (res.body as { namespace: string; name: string }[]).map((r) => `${r.namespace}/${r.name}`).sort()

  for (const base of ['/discovery', '/api/v1/discovery']) {
    t.same(
      names(await asA('GET', `${base}/templates`)),
      ['desk-internal/memo', 'desk/reply'],
      `${base}: A's active templates`,
    )
    t.same(names(await asB('GET', `${base}/templates`)), [], `${base}: none of A's for B`)
    t.same(
      names(await asA('GET', `${base}/templates?app=desk/app`)),
      ['desk/reply'],
      `${base}: ?app= keeps the exposed namespaces`,
    )
    t.same(
      names(await asA('GET', `${base}/templates`, undefined, { 'X-Application': 'desk/app' })),
      ['desk/reply'],
      `${base}: so does X-Application`,
    )
    t.same(
      names(await asA('GET', `${base}/agents?app=desk/app`)),
      ['default/default', 'desk/helper'],
      `${base}: * exposes every namespace the caller can see`,
    )
    t.same(
      names(await asA('GET', `${base}/skills?app=desk/app`)),
      [],
      `${base}: a type without an entry exposes nothing`,
    )
    t.same(names(await asA('GET', `${base}/skills`)), ['desk/tone'])
    t.same(names(await asA('GET', `${base}/templates?app=desk/nope`)), [], `${base}: an unknown app exposes nothing`)
    t.same(names(await asA('GET', `${base}/collections`)), [], `${base}: collections: A has none yet`)
    const bad = await asA('GET', `${base}/templates`, undefined, { 'X-Application': '../../etc' })
    t.equal(bad.status, 422, bad.text)
    t.equal((bad.body as { code: string }).code, 'discovery.bad_app')
    t.equal((await asA('GET', `${base}/gadgets`)).status, 422, 'an unknown type')
  }
  // B using A's app sees only B's own things within the exposed namespaces (the filter narrows, never widens)
  t.same(names(await asB('GET', '/discovery/templates?app=desk/app')), [])
  t.same(names(await asAdmin('GET', '/discovery/templates?app=desk/app')), ['desk/reply'])
  // ?app= wins over the header
  t.same(names(await asA('GET', '/discovery/templates?app=desk/nope', undefined, { 'X-Application': 'desk/app' })), [])
})

t.test('store dependencies are checked against real stores and state entries', async (t) => {
  type Dep = { store: string; key: string | null; exists: boolean; key_checked: boolean }
  type Status = {
    ready: boolean
    resources: { missing: { name: string }[] }
    stores: { satisfied: Dep[]; missing: Dep[] }
  }
  const status = async (as: typeof asA, path: string): Promise<Status> =>
    (await ok(as('GET', path), 200)) as unknown as Status
  await ok(asA('POST', '/api/v1/stores', { namespace: 'desk', name: 'prefs' }))
  await ok(asA('POST', '/api/v1/stores', { namespace: 'desk', name: 'memory' }))
  await ok(
    asA('POST', '/api/v1/manifests', {
      namespace: 'desk',
      name: 'memo-app',
      store_dependencies: [{ store: 'desk/prefs' }, { store: 'desk/memory', key: 'profile' }],
    }),
  )
  const path = '/api/runtime/manifests/desk/memo-app/status'

  const before = await status(asA, path)
  t.equal(before.ready, false)
  t.same(
    before.stores.satisfied,
    [{ store: 'desk/prefs', key: null, exists: true, key_checked: false }],
    'a store without a key: the store resource is enough',
  )
  t.same(
    before.stores.missing,
    [{ store: 'desk/memory', key: 'profile', exists: false, key_checked: true }],
    'the store exists, the key does not: checked and missing',
  )

  await ok(asA('POST', '/stores/desk/memory/states', { key: 'profile', value: { tone: 'brief' } }))
  const after = await status(asA, path)
  t.equal(after.ready, true, 'ready once the entry exists')
  t.same(after.stores.satisfied, [
    { store: 'desk/prefs', key: null, exists: true, key_checked: false },
    { store: 'desk/memory', key: 'profile', exists: true, key_checked: true },
  ])

  // B's own manifest naming A's store: the store is invisible to B, so neither it nor its key is
  // reported (the status is no way to learn whether A's keys exist)
  await ok(
    asB('POST', '/api/v1/manifests', {
      namespace: 'bdesk',
      name: 'peek',
      store_dependencies: [{ store: 'desk/memory', key: 'profile' }],
    }),
  )
  t.same((await status(asB, '/api/runtime/manifests/bdesk/peek/status')).stores.missing, [
    { store: 'desk/memory', key: 'profile', exists: false, key_checked: false },
  ])

  // an entry that expired (the sweep has not run) or was deleted no longer satisfies the dependency
  await ok(
    asA('PUT', '/stores/desk/memory/states/profile', { expires_at: new Date(Date.now() + 1500).toISOString() }),
    200,
  )
  await new Promise((r) => setTimeout(r, 1600))
  t.same(
    (await status(asA, path)).stores.missing,
    [{ store: 'desk/memory', key: 'profile', exists: false, key_checked: true }],
    'expired',
  )
  await ok(asA('PUT', '/stores/desk/memory/states/profile', { value: { tone: 'long' } }), 201)
  t.equal((await status(asA, path)).ready, true, 'written again')
  t.equal((await asA('DELETE', '/stores/desk/memory/states/profile')).status, 204)
  t.equal((await status(asA, path)).ready, false, 'deleted')

  // the 'wanting' manifest's collection requirement is satisfied once the collection exists
  t.same(
    (await status(asA, '/api/runtime/manifests/desk/wanting/status')).resources.missing.map((r) => r.name),
    ['nobody', 'secret-agent', 'x', 'manuals'],
  )
  await ok(asA('POST', '/api/v1/collections', { namespace: 'kb', name: 'manuals' }))
  t.same(
    (await status(asA, '/api/runtime/manifests/desk/wanting/status')).resources.missing.map((r) => r.name),
    ['nobody', 'secret-agent', 'x'],
  )
})

t.test('discovery lists collections, narrowed by the app', async (t) => {
  await ok(asA('POST', '/api/v1/collections', { namespace: 'desk', name: 'manuals' }))
  const names = (res: { body: unknown }) =>
    (res.body as { namespace: string; name: string }[]).map((r) => `${r.namespace}/${r.name}`).sort()
  t.same(names(await asA('GET', '/discovery/collections')), ['desk/manuals', 'kb/manuals'])
  t.same(
    names(await asA('GET', '/discovery/collections', undefined, { 'X-Application': 'desk/app' })),
    [],
    'the app exposes no collections',
  )
  await ok(
    asA('PUT', '/api/v1/manifests/desk/app', {
      exposed_namespaces: { templates: ['desk'], agents: ['*'], collections: ['kb'] },
    }),
    200,
  )
  t.same(names(await asA('GET', '/discovery/collections', undefined, { 'X-Application': 'desk/app' })), ['kb/manuals'])
  t.same(names(await asB('GET', '/discovery/collections?app=desk/app')), [], "B sees none of A's")
})
