import t from 'tap'
import { agentKind } from '../../src/kinds/agent/kind.ts'
import { functionKind } from '../../src/kinds/function/kind.ts'
import { startTestPlatform } from '../helpers/env.ts'
import type { Principal } from '../../src/auth/principal.ts'

/*
 * What the generic engine adds beyond CRUD: managed_by and detach-on-edit, apply by checksum,
 * wildcard expansion, owner scoping, admin-only kinds and fields, secrets at rest, exclusive flags.
 */
const env = await startTestPlatform(t)
const service = env.platform.resources
if (service === undefined) throw new Error('resource service not running')
const admin: Principal = { userId: env.adminId, email: 'admin@test.local', permissions: ['platform.*:all'] }
const code = 'def handler(input, context):\n    return input\n'

t.test('apply sets managed_by, skips unchanged, and an API edit detaches', async (t) => {
  const body = { namespace: 'pkg', name: 'tool', code }
  const first = await service.apply(admin, functionKind, body, { managedBy: 'pkg:demo' })
  t.equal(first.action, 'created')
  t.equal(first.record?.['managed_by'], 'pkg:demo')
  t.equal(
    (await service.apply(admin, functionKind, body, { managedBy: 'pkg:demo' })).action,
    'unchanged',
    'same checksum is skipped',
  )
  const dry = await service.apply(
    admin,
    functionKind,
    { ...body, description: 'changed' },
    { managedBy: 'pkg:demo', dryRun: true },
  )
  t.equal(dry.action, 'updated')
  t.equal((await env.request('GET', '/api/v1/functions/pkg/tool')).body !== undefined, true)
  t.equal(
    ((await env.request('GET', '/api/v1/functions/pkg/tool')).body as { description: string }).description,
    '',
    'dry run changed nothing',
  )
  const edited = await env.request('PUT', '/api/v1/functions/pkg/tool', { body: { description: 'edited by hand' } })
  t.equal(edited.status, 200)
  t.equal((edited.body as { managed_by: unknown }).managed_by, null, 'editing a managed resource detaches it')
  const other = await service.apply(admin, functionKind, body, { managedBy: 'pkg:demo' })
  t.equal(other.action, 'unchanged')
  t.match(other.warning, /not managed by pkg:demo/, 'a detached resource is not overwritten')
})

t.test('wildcard expansion', async (t) => {
  for (const [ns, name] of [
    ['tools', 'a'],
    ['tools', 'b'],
    ['misc', 'c'],
  ] as const) {
    t.equal((await env.request('POST', '/api/v1/functions', { body: { namespace: ns, name, code } })).status, 201)
  }
  await env.request('PUT', '/api/v1/functions/misc/c', { body: {} })
  const byNs = await service.expand(admin, functionKind, ['tools/*'])
  t.same(byNs, [
    { namespace: 'tools', name: 'a' },
    { namespace: 'tools', name: 'b' },
  ])
  const exact = await service.expand(admin, functionKind, ['misc/c', 'tools/b', 'nope/x'])
  t.same(exact, [
    { namespace: 'misc', name: 'c' },
    { namespace: 'tools', name: 'b' },
  ])
  const all = await service.expand(admin, functionKind, ['*/*'])
  t.ok(all.length >= 4)
  await env.request('PUT', '/api/v1/functions/tools/b', { body: { is_active: false } })
  t.same(
    await service.expand(admin, functionKind, ['tools/*']),
    [{ namespace: 'tools', name: 'a' }],
    'inactive resources are not expanded',
  )
  const user = await env.createUser('expand@test.local')
  const principal: Principal = {
    userId: user.id,
    email: 'expand@test.local',
    permissions: ['platform.functions/*/*.read:own'],
  }
  t.same(await service.expand(principal, functionKind, ['*/*']), [], "other users' resources are not expanded")
  const agents = await service.expand(principal, agentKind, ['default/*'])
  t.same(agents, [], 'a principal without read grants sees nothing')
})

t.test('ordinary users see their own resources only; others answer 404', async (t) => {
  const alice = await env.createUser('alice@test.local')
  const bob = await env.createUser('bob@test.local')
  const created = await env.request('POST', '/api/v1/skills', {
    token: alice.token,
    body: { namespace: 'alice', name: 'notes', content: 'x' },
  })
  t.equal(created.status, 201, created.text)
  t.equal((created.body as { owner_id: string }).owner_id, alice.id)
  t.equal((await env.request('GET', '/api/v1/skills/alice/notes', { token: bob.token })).status, 404)
  t.equal(
    (await env.request('PUT', '/api/v1/skills/alice/notes', { token: bob.token, body: { content: 'y' } })).status,
    404,
  )
  t.equal((await env.request('DELETE', '/api/v1/skills/alice/notes', { token: bob.token })).status, 404)
  t.same(((await env.request('GET', '/api/v1/skills', { token: bob.token })).body as unknown[]).length, 0)
  t.equal((await env.request('GET', '/api/v1/skills/alice/notes', { token: alice.token })).status, 200)
  t.equal((await env.request('GET', '/api/v1/skills/alice/notes')).status, 200, 'admin sees everything')
  const defaultAgent = await env.request('GET', '/api/v1/agents/default/default', { token: bob.token })
  t.equal(defaultAgent.status, 200, 'Users may read the default agent')
  t.equal(
    (await env.request('PUT', '/api/v1/agents/default/default', { token: bob.token, body: { temperature: 1 } })).status,
    403,
    'but not change it',
  )
  const guest = await env.createUser('guest@test.local', ['GuestUsers'])
  t.equal(
    (await env.request('POST', '/api/v1/skills', { token: guest.token, body: { name: 'x', content: '' } })).status,
    403,
  )
  const nobody = await env.createUser('nobody@test.local', [])
  t.equal((await env.request('GET', '/api/v1/agents/default/default', { token: nobody.token })).status, 404)
})

t.test('admin-only kinds and fields', async (t) => {
  const user = await env.createUser('carol@test.local')
  const r = await env.request('POST', '/api/v1/llm-providers', {
    token: user.token,
    body: { name: 'mine', provider_type: 'openai' },
  })
  t.equal(r.status, 403, 'LLM providers are an admin-only area: 403')
  const list = await env.request('GET', '/api/v1/llm-providers', { token: user.token })
  t.equal(list.status, 403, 'listing them too (an empty 200 would suggest the area is theirs)')
  t.match(list.body, { code: 'auth.admin_only' })
  const shared = await env.request('POST', '/api/v1/functions', {
    token: user.token,
    body: { namespace: 'carol', name: 'f', code, shared_pool: true },
  })
  t.equal(shared.status, 403, 'shared_pool is admin-only')
  t.equal(
    (
      await env.request('POST', '/api/v1/functions', {
        token: user.token,
        body: { namespace: 'carol', name: 'f', code },
      })
    ).status,
    201,
  )
  t.equal(
    (await env.request('PUT', '/api/v1/functions/carol/f', { token: user.token, body: { shared_pool: true } })).status,
    403,
  )
  t.equal(
    (await env.request('PUT', '/api/v1/functions/carol/f', { body: { shared_pool: true } })).status,
    200,
    'an admin may',
  )
})

t.test('LLM provider secrets: encrypted at rest, never returned, one default', async (t) => {
  const a = await env.request('POST', '/api/v1/llm-providers', {
    body: { name: 'alpha', provider_type: 'anthropic', api_key: 'sk-ant-plaintext-123', is_default: true },
  })
  t.equal(a.status, 201, a.text)
  t.notOk(a.text.includes('sk-ant-plaintext-123'))
  const [row] = await env.sql<{ spec: unknown; secrets: Record<string, string> }>(
    "select spec, secrets from resources where kind = 'llm_provider' and name = 'alpha'",
  )
  t.notOk(JSON.stringify(row).includes('sk-ant-plaintext-123'), 'no plaintext in the database')
  t.match(row?.secrets['api_key'], /^v1:[0-9a-f]{8}:/)
  const id = (a.body as { id: string }).id
  t.same(await service.secretsOf(env.platform.resources?.kinds.get('llm_provider') as never, id), {
    api_key: 'sk-ant-plaintext-123',
  })
  const b = await env.request('POST', '/api/v1/llm-providers', {
    body: { name: 'beta', provider_type: 'mistral', is_default: true },
  })
  t.equal(b.status, 201)
  t.equal(
    ((await env.request('GET', '/api/v1/llm-providers/alpha')).body as { is_default: boolean }).is_default,
    false,
    'setting a new default clears the old one',
  )
  const cleared = await env.request('PATCH', `/api/v1/llm-providers/${id}`, { body: { api_key: null } })
  t.equal((cleared.body as { has_api_key: boolean }).has_api_key, false)
  const ollama = await env.request('POST', '/api/v1/llm-providers', {
    body: { name: 'local', provider_type: 'ollama' },
  })
  t.equal(ollama.status, 422)
  t.match(ollama.body, { errors: [{ path: 'api_endpoint' }] })
  const copied = await env.request('POST', '/api/v1/llm-providers', {
    body: { name: 'gamma', provider_type: 'openai', api_key: 'other' },
  })
  const gammaId = (copied.body as { id: string }).id
  await env.sql('update resources set secrets = (select secrets from resources where id = $1) where id = $2', [
    id,
    gammaId,
  ])
  await env.request('PATCH', `/api/v1/llm-providers/${id}`, { body: { api_key: 'again' } })
  await env.sql('update resources set secrets = (select secrets from resources where id = $1) where id = $2', [
    id,
    gammaId,
  ])
  await t.rejects(
    service.secretsOf(env.platform.resources?.kinds.get('llm_provider') as never, gammaId),
    { code: 'secrets.undecryptable' },
    'a ciphertext moved to another row does not decrypt',
  )
})

t.test('byId and loadMany: typed records for the platform itself, no permission check', async (t) => {
  for (const name of ['m1', 'm2'])
    t.equal((await env.request('POST', '/api/v1/functions', { body: { namespace: 'many', name, code } })).status, 201)
  const listed = await service.get(admin, functionKind, { namespace: 'many', name: 'm1' })
  const one = await service.byId(functionKind, listed.id)
  // typed by the kind's spec: `code` and `entrypoint` are strings, defaults filled in
  const text: string = one?.code ?? ''
  t.equal(text, code)
  t.equal(one?.entrypoint, 'handler')
  t.equal(await service.byId(functionKind, '00000000-0000-0000-0000-000000000000'), null)
  const many = await service.loadMany(functionKind, ['many/m2', 'many/absent', 'many/m1'])
  t.same(
    many.map((r) => r.name),
    ['m2', 'm1'],
    'in the order asked, absent ones left out',
  )
})
