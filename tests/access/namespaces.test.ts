import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.ts'

/*
 * Namespaces have owners (hardening issue): the first writer claims a namespace, only its owner,
 * its members and admins create in it, creating in someone else's namespace answers 403 without
 * saying whether the resource exists, and an agent's wildcards only pick resources in namespaces
 * its owner owns or accepted — so a plain user cannot plant a function into an admin's `tools/*`.
 */
let env: TestPlatform
let llm: FakeLlm
let alice: { id: string; token: string }
let bob: { id: string; token: string }
let carol: { id: string; token: string }

const fn = (namespace: string, name: string) => ({
  namespace,
  name,
  code: 'def handler(input, context):\n    return {"ok": True}\n',
})

t.before(async () => {
  llm = await startFakeLlm()
  t.teardown(() => llm.close())
  env = await startTestPlatform(t)
  alice = await env.createUser('alice@ns.test')
  bob = await env.createUser('bob@ns.test')
  carol = await env.createUser('carol@ns.test')
  const r = await env.request('POST', '/api/v1/llm-providers', {
    body: {
      name: 'fake',
      provider_type: 'openai',
      api_endpoint: llm.endpoint('openai'),
      api_key: 'k',
      default_model: 'm',
      is_default: true,
    },
  })
  if (r.status !== 201) throw new Error(r.text)
})

t.test('the first writer claims a namespace; others get 403 and learn nothing about its resources', async (t) => {
  const created = await env.request('POST', '/api/v1/functions', { token: alice.token, body: fn('alice-ns', 'fn1') })
  t.equal(created.status, 201, created.text)
  const mine = await env.request('GET', '/api/v1/namespaces', { token: alice.token })
  t.match(mine.body, { items: [{ name: 'alice-ns', owner_id: alice.id, members: [] }], total: 1 })

  const same = await env.request('POST', '/api/v1/functions', { token: bob.token, body: fn('alice-ns', 'fn1') })
  const other = await env.request('POST', '/api/v1/functions', { token: bob.token, body: fn('alice-ns', 'fn2') })
  t.equal(same.status, 403, 'an existing name in a foreign namespace: 403, not 409')
  t.equal(other.status, 403, 'a new name there: the same 403')
  t.match(same.body, { code: 'namespace.forbidden' })
  t.same(same.body, other.body, 'both answers are identical: no existence leak')
  t.same((await env.request('GET', '/api/v1/namespaces', { token: bob.token })).body, { items: [], total: 0 })
  t.equal((await env.request('GET', '/api/v1/namespaces/alice-ns', { token: bob.token })).status, 404)
  t.equal(
    (await env.request('POST', '/api/v1/namespaces', { token: bob.token, body: { name: 'alice-ns' } })).status,
    409,
    'a held name cannot be claimed',
  )

  const admin = await env.request('POST', '/api/v1/functions', { body: fn('alice-ns', 'by-admin') })
  t.equal(admin.status, 201, 'an admin creates anywhere')
  t.equal((await env.request('GET', '/api/v1/namespaces/alice-ns')).status, 200, 'and reads every namespace')
})

t.test('the owner grants a namespace; a member creates in it but cannot grant it further', async (t) => {
  const grant = await env.request('PUT', `/api/v1/namespaces/alice-ns/members/${bob.id}`, { token: alice.token })
  t.equal(grant.status, 200, grant.text)
  t.match(grant.body, { members: [{ user_id: bob.id, granted_by: alice.id, accepted: false }] })
  t.equal(
    (await env.request('POST', '/api/v1/functions', { token: bob.token, body: fn('alice-ns', 'fn2') })).status,
    201,
    'a member creates',
  )
  t.equal(
    (await env.request('GET', '/api/v1/namespaces/alice-ns', { token: bob.token })).status,
    200,
    'and sees the namespace',
  )
  const further = await env.request('PUT', `/api/v1/namespaces/alice-ns/members/${carol.id}`, { token: bob.token })
  t.equal(further.status, 403)
  t.match(further.body, { code: 'namespace.not_owner' })
  const accept = await env.request('PUT', `/api/v1/namespaces/alice-ns/members/${bob.id}`, { token: bob.token })
  t.match(accept.body, { members: [{ user_id: bob.id, accepted: true }] }, 'the member accepts its own grant')
  const revoke = await env.request('DELETE', `/api/v1/namespaces/alice-ns/members/${bob.id}`, { token: alice.token })
  t.equal(revoke.status, 200)
  t.equal(
    (await env.request('POST', '/api/v1/functions', { token: bob.token, body: fn('alice-ns', 'fn3') })).status,
    403,
    'revoked: no more creates',
  )
  t.equal(
    (await env.request('DELETE', '/api/v1/namespaces/alice-ns', { token: alice.token })).status,
    409,
    'a namespace with resources is not released',
  )
})

t.test(
  "an admin's wildcard never picks up a plain user's function unless the admin granted that namespace",
  async (t) => {
    // The plain user gets to `tools` first and plants a function there.
    t.equal(
      (
        await env.request('POST', '/api/v1/functions', {
          token: bob.token,
          body: { ...fn('tools', 'steal'), description: 'planted' },
        })
      ).status,
      201,
    )
    // The admin's own namespace and the agent that enables wildcards.
    t.equal((await env.request('POST', '/api/v1/functions', { body: fn('ops-tools', 'safe') })).status, 201)
    const agent = await env.request('POST', '/api/v1/agents', {
      body: {
        namespace: 'ops',
        name: 'boss',
        system_prompt: 'You are the ops boss.',
        enabled_functions: ['tools/*', 'ops-tools/*', '*/*'],
      },
    })
    t.equal(agent.status, 201, agent.text)
    // The planted namespace's owner grants it to the admin: not accepted by the admin, so still not picked.
    t.equal(
      (await env.request('PUT', `/api/v1/namespaces/tools/members/${env.adminId}`, { token: bob.token })).status,
      200,
    )

    const toolsOffered = async (): Promise<string[]> => {
      const chat = (await env.request('POST', '/agents/ops/boss/chats', { body: {} })).body as { id: string }
      llm.push({ text: 'ok' })
      const res = await env.request('POST', `/chats/${chat.id}/messages`, { body: { content: 'list your tools' } })
      if (res.status !== 200) throw new Error(res.text)
      const sent = llm.requests.at(-1)?.body as { tools?: { function: { name: string } }[] }
      return (sent.tools ?? []).map((x) => x.function.name).sort()
    }
    t.same(await toolsOffered(), ['ops-tools__safe'], "only the admin's own namespace is expanded")

    // The admin takes up the namespace on purpose: from then on its wildcards include it.
    const accept = await env.request('PUT', `/api/v1/namespaces/tools/members/${env.adminId}`)
    t.match(accept.body, { members: [{ user_id: env.adminId, accepted: true }] })
    t.same(await toolsOffered(), ['ops-tools__safe', 'tools__steal'], 'after the admin granted it')
  },
)

t.test('an exact reference is not limited by namespaces, but still by what the chatting user may read', async (t) => {
  t.equal(
    (
      await env.request('POST', '/api/v1/agents', {
        token: carol.token,
        body: {
          namespace: 'carol',
          name: 'a',
          system_prompt: 'carol agent',
          enabled_functions: ['alice-ns/fn1', 'carol-tools/*'],
        },
      })
    ).status,
    201,
  )
  t.equal(
    (await env.request('POST', '/api/v1/functions', { token: carol.token, body: fn('carol-tools', 'mine') })).status,
    201,
  )
  const chat = (await env.request('POST', '/agents/carol/a/chats', { token: carol.token, body: {} })).body as {
    id: string
  }
  llm.push({ text: 'ok' })
  t.equal(
    (await env.request('POST', `/chats/${chat.id}/messages`, { token: carol.token, body: { content: 'hi' } })).status,
    200,
  )
  const sent = llm.requests.at(-1)?.body as { tools?: { function: { name: string } }[] }
  t.same(
    (sent.tools ?? []).map((x) => x.function.name),
    ['carol-tools__mine'],
    "alice's function is not carol's to read",
  )
})

t.test('an unsafe template is refused when the agent is saved, with the reason', async (t) => {
  const bad = await env.request('POST', '/api/v1/agents', {
    token: carol.token,
    body: { namespace: 'carol', name: 'evil', system_prompt: "{{ ''.constructor.constructor('return process')() }}" },
  })
  t.equal(bad.status, 422, bad.text)
  t.match(bad.body, { errors: [{ path: 'system_prompt', message: /template\./ }] })
  const badParam = await env.request('POST', '/api/v1/agents', {
    token: carol.token,
    body: { namespace: 'carol', name: 'evil2', function_parameters: { 'carol-tools/mine': { x: '{% for %}' } } },
  })
  t.equal(badParam.status, 422)
  t.match(badParam.body, { errors: [{ path: 'function_parameters.carol-tools/mine.x' }] })
  const update = await env.request('PUT', '/api/v1/agents/carol/a', {
    token: carol.token,
    body: { system_prompt: '{{ x.__proto__ }}' },
  })
  t.equal(update.status, 422, 'and on update')
})

t.test('admin-only lists answer 403 to a plain user', async (t) => {
  t.equal((await env.request('GET', '/api/v1/llm-providers', { token: carol.token })).status, 403)
  t.equal((await env.request('GET', '/api/v1/dependencies', { token: carol.token })).status, 403)
  t.equal((await env.request('GET', '/api/v1/llm-providers')).status, 200)
  t.equal((await env.request('GET', '/api/v1/dependencies')).status, 200)
})
