import { Type as T } from '@sinclair/typebox'
import t from 'tap'
import type { Principal } from '../../src/auth/principal.ts'
import { discoveryHandlers } from '../../src/discovery/handlers.ts'
import { createSecretBox } from '../../src/kernel/crypto.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { KINDS } from '../../src/kinds/index.ts'
import { manifestKind } from '../../src/kinds/manifest/kind.ts'
import { manifestStatus } from '../../src/manifests/status.ts'
import { registerStoreKeyProbe } from '../../src/manifests/store-keys.ts'
import type { Db } from '../../src/platform/db.ts'
import { defineKind } from '../../src/resources/kind.ts'
import { createResourceService } from '../../src/resources/service.ts'
import { ENCRYPTION_KEY, startTestPlatform } from '../helpers/env.ts'

/*
 * Manifests (SPEC.md §2.13, §4.6) and discovery (§4.9) through HTTP: status ready / not ready for
 * the caller, B's 404 on A's manifest, discovery filtered by X-Application / ?app=. Kinds other
 * helpers build (store, collection) are stood in for by kinds defined here, registered in a second
 * resource service over the same database, to show both features find them by name once they exist.
 */
const env = await startTestPlatform(t)
const a = await env.createUser('mf-a@test.local')
const b = await env.createUser('mf-b@test.local')

const req = (token: string) => (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
  env.request(method, path, { token, ...(body === undefined ? {} : { body }), ...(headers === undefined ? {} : { headers }) })
const asA = req(a.token)
const asB = req(b.token)
const asAdmin = req(env.adminToken)

async function ok(res: Promise<{ status: number; text: string; body: unknown }>, status = 201): Promise<Record<string, unknown>> {
  const r = await res
  if (r.status !== status) throw new Error(`${String(r.status)} ${r.text}`)
  return r.body as Record<string, unknown>
}

await ok(asA('POST', '/api/v1/agents', { namespace: 'desk', name: 'helper', system_prompt: 'You help.' }))
await ok(asAdmin('POST', '/api/v1/agents', { namespace: 'private', name: 'secret-agent', system_prompt: 'No.' }))

t.test('manifest fields are checked when saved', async (t) => {
  const bad = await asA('POST', '/api/v1/manifests', { namespace: 'desk', name: 'bad', required_permissions: ['platform.agents/desk/helper.chat'] })
  t.equal(bad.status, 422, bad.text)
  t.ok((bad.body as { errors: { path: string }[] }).errors.some((e) => e.path === '/required_permissions/0'), bad.text)
  t.equal((await asA('POST', '/api/v1/manifests', { namespace: 'desk', name: 'bad', store_dependencies: [{ store: 'no-slash' }] })).status, 422)
  t.equal((await asA('POST', '/api/v1/manifests', { namespace: 'desk', name: 'bad', exposed_namespaces: { agents: ['Bad NS'] } })).status, 422)
  t.equal((await asA('POST', '/api/v1/manifests', { namespace: 'desk', name: 'bad', required_resources: [{ type: 'agent', name: 'x', extra: 1 }] })).status, 422)
})

t.test('status: ready when everything is there for the caller', async (t) => {
  await ok(asA('POST', '/api/v1/manifests', {
    namespace: 'desk',
    name: 'ready',
    required_resources: [{ type: 'agent', namespace: 'desk', name: 'helper' }, { type: 'agents', namespace: 'default', name: 'default' }],
    required_permissions: ['platform.agents/desk/helper.chat:own'],
    optional_permissions: ['platform.system.read:all'],
  }))
  for (const path of ['/api/runtime/manifests/desk/ready/status', '/manifests/desk/ready/status']) {
    const res = await asA('GET', path)
    t.equal(res.status, 200, res.text)
    t.same(res.body, {
      ready: true,
      resources: {
        satisfied: [
          { type: 'agent', namespace: 'desk', name: 'helper', exists: true },
          { type: 'agents', namespace: 'default', name: 'default', exists: true },
        ],
        missing: [],
      },
      permissions: { required: { granted: ['platform.agents/desk/helper.chat:own'], missing: [] }, optional: { granted: [], missing: ['platform.system.read:all'] } },
      stores: { satisfied: [], missing: [] },
    }, path)
  }
})

t.test('status: not ready, with what is missing', async (t) => {
  await ok(asA('POST', '/api/v1/manifests', {
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
  }))
  const res = await asA('GET', '/api/runtime/manifests/desk/wanting/status')
  t.equal(res.status, 200, res.text)
  const s = res.body as { ready: boolean; resources: { satisfied: { name: string }[]; missing: { name: string; exists: boolean }[] }; permissions: { required: { granted: string[]; missing: string[] } }; stores: { satisfied: unknown[]; missing: { store: string; key: string | null; exists: boolean; key_checked: boolean }[] } }
  t.equal(s.ready, false)
  t.same(s.resources.satisfied.map((r) => r.name), ['helper'])
  t.same(s.resources.missing.map((r) => r.name), ['nobody', 'secret-agent', 'x', 'manuals'], "absent, another user's private agent, an unknown type, a kind not registered yet")
  t.ok(s.resources.missing.every((r) => !r.exists))
  t.same(s.permissions.required, { granted: ['platform.agents/desk/helper.read:own'], missing: ['platform.system.update:all'] })
  t.same(s.stores.missing, [
    { store: 'desk/prefs', key: null, exists: false, key_checked: false },
    { store: 'desk/memory', key: 'profile', exists: false, key_checked: false },
  ], 'no store kind is registered here: every store dependency is missing')
  // the admin sees the private agent and holds every permission: the same manifest reads differently
  const admin = (await asAdmin('GET', '/api/runtime/manifests/desk/wanting/status')).body as typeof s
  t.same(admin.resources.missing.map((r) => r.name), ['nobody', 'x', 'manuals'])
  t.same(admin.permissions.required.missing, [])

  // an inactive required resource is not satisfied
  await ok(asA('PUT', '/api/v1/agents/desk/helper', { is_active: false }), 200)
  const off = (await asA('GET', '/api/runtime/manifests/desk/ready/status')).body as typeof s
  t.equal(off.ready, false)
  t.same(off.resources.missing.map((r) => r.name), ['helper'])
  await ok(asA('PUT', '/api/v1/agents/desk/helper', { is_active: true }), 200)
})

t.test("B gets 404 on A's manifest and its status", async (t) => {
  for (const path of ['/api/runtime/manifests/desk/ready/status', '/manifests/desk/ready/status', '/api/v1/manifests/desk/ready']) {
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
  await ok(asA('POST', '/api/v1/manifests', { namespace: 'desk', name: 'app', exposed_namespaces: { templates: ['desk'], agents: ['*'] } }))
  const names = (res: { body: unknown }) => (res.body as { namespace: string; name: string }[]).map((r) => `${r.namespace}/${r.name}`).sort()

  for (const base of ['/discovery', '/api/v1/discovery']) {
    t.same(names(await asA('GET', `${base}/templates`)), ['desk-internal/memo', 'desk/reply'], `${base}: A's active templates`)
    t.same(names(await asB('GET', `${base}/templates`)), [], `${base}: none of A's for B`)
    t.same(names(await asA('GET', `${base}/templates?app=desk/app`)), ['desk/reply'], `${base}: ?app= keeps the exposed namespaces`)
    t.same(names(await asA('GET', `${base}/templates`, undefined, { 'X-Application': 'desk/app' })), ['desk/reply'], `${base}: so does X-Application`)
    t.same(names(await asA('GET', `${base}/agents?app=desk/app`)), ['default/default', 'desk/helper'], `${base}: * exposes every namespace the caller can see`)
    t.same(names(await asA('GET', `${base}/skills?app=desk/app`)), [], `${base}: a type without an entry exposes nothing`)
    t.same(names(await asA('GET', `${base}/skills`)), ['desk/tone'])
    t.same(names(await asA('GET', `${base}/templates?app=desk/nope`)), [], `${base}: an unknown app exposes nothing`)
    t.same(names(await asA('GET', `${base}/collections`)), [], `${base}: collections: none until that kind is registered`)
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

t.test('kinds built elsewhere light up by name: store (manifest status) and collection (discovery)', async (t) => {
  const storeKind = defineKind({ kind: 'store', plural: 'stores', title: 'TestStore', spec: T.Object({ description: T.String({ default: '' }) }, { additionalProperties: false }) })
  const collectionKind = defineKind({ kind: 'collection', plural: 'collections', title: 'TestCollection', spec: T.Object({ description: T.String({ default: '' }) }, { additionalProperties: false }) })
  const svc = createResourceService({ db: env.platform.db as Db, log: createLogger({ level: 'silent' }), kinds: [...KINDS, storeKind, collectionKind], box: createSecretBox(ENCRYPTION_KEY) })
  const admin: Principal = { userId: env.adminId, email: 'admin@test.local', permissions: ['platform.*:all'] }
  await svc.create(admin, storeKind, { namespace: 'desk', name: 'prefs' })
  await svc.create(admin, storeKind, { namespace: 'desk', name: 'memory' })
  await svc.create(admin, collectionKind, { namespace: 'desk', name: 'manuals' })
  await svc.create(admin, collectionKind, { namespace: 'kb', name: 'manuals' })

  const manifest = await svc.get(admin, manifestKind, { namespace: 'desk', name: 'wanting' })
  const before = await manifestStatus(svc, admin, manifest)
  t.same(before.stores.satisfied, [
    { store: 'desk/prefs', key: null, exists: true, key_checked: false },
    { store: 'desk/memory', key: 'profile', exists: true, key_checked: false },
  ], 'stores exist once the kind is registered (keys unchecked without a probe)')
  t.same(before.resources.missing.map((r) => r.name), ['nobody', 'x'], 'the collection requirement is satisfied too')

  const asked: string[] = []
  registerStoreKeyProbe(async (_p, store, key) => {
    asked.push(`${store.namespace}/${store.name}:${key}`)
    return false
  })
  const after = await manifestStatus(svc, admin, manifest)
  t.same(after.stores.missing, [{ store: 'desk/memory', key: 'profile', exists: false, key_checked: true }], 'a missing key is a missing dependency')
  t.same(asked, ['desk/memory:profile'])

  const [bound] = discoveryHandlers({ resources: svc })
  if (bound === undefined) throw new Error('no discovery route')
  const request = { requestId: 'test', caller: null, clientIp: '' }
  const all = await bound.handle({ principal: admin, params: { type: 'collections' }, query: {}, body: undefined, request })
  t.same((all.body as { namespace: string }[]).map((c) => c.namespace).sort(), ['desk', 'kb'])
  const narrowed = await bound.handle({ principal: admin, params: { type: 'collections' }, query: {}, body: undefined, request: { ...request, headers: { 'x-application': 'desk/app' } } })
  t.same(narrowed.body, [], 'the app exposes no collections')
  await svc.update(admin, manifestKind, { namespace: 'desk', name: 'app' }, { exposed_namespaces: { collections: ['kb'] } })
  const exposed = await bound.handle({ principal: admin, params: { type: 'collections' }, query: {}, body: undefined, request: { ...request, headers: { 'x-application': 'desk/app' } } })
  t.same((exposed.body as { namespace: string; name: string }[]).map((c) => `${c.namespace}/${c.name}`), ['kb/manuals'])
})
