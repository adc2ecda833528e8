import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.ts'

/*
 * The store tools in a real turn (fake LLM provider, real workers): which tools an agent offers,
 * an agent saving and then answering from a state, a write through a readonly store refused, and
 * the chat's user's own permissions applied when a tool runs.
 */
let env: TestPlatform
let llm: FakeLlm
let a: { id: string; token: string }
let b: { id: string; token: string }

type Msg = { role: string; content: string; tool_call_id: string }
const post = async (token: string, path: string, body: unknown) => env.request('POST', path, { token, body })
const must = async (token: string, path: string, body: unknown) => {
  const r = await post(token, path, body)
  if (r.status !== 201) throw new Error(`${path}: ${r.text}`)
  return r.body as { id: string }
}
const toolNames = (i: number) =>
  ((llm.requests[i]?.body as { tools?: { function: { name: string } }[] } | undefined)?.tools ?? [])
    .map((x) => x.function.name)
    .sort()

/** Sends one message in a new chat of `agent` as `who`; answers the tool results by call id. */
async function turn(
  who: { token: string },
  agent: string,
  content: string,
): Promise<{ reply: string; results: Record<string, unknown> }> {
  const chat = await must(who.token, `/agents/${agent}/chats`, {})
  const res = await post(who.token, `/chats/${chat.id}/messages`, { content })
  if (res.status !== 200) throw new Error(`turn: ${res.text}`)
  const full = (await env.request('GET', `/chats/${chat.id}`, { token: who.token })).body as { messages: Msg[] }
  const results = Object.fromEntries(
    full.messages.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, JSON.parse(m.content) as unknown]),
  )
  return { reply: (res.body as { content: string }).content, results }
}

t.before(async () => {
  llm = await startFakeLlm()
  t.teardown(() => llm.close())
  env = await startTestPlatform(t)
  await must(env.adminToken, '/api/v1/llm-providers', {
    name: 'fake',
    provider_type: 'openai',
    api_endpoint: llm.endpoint('openai'),
    api_key: 'sk-fake',
    default_model: 'fake-model',
    is_default: true,
  })
  a = await env.createUser('tools-a@test.local')
  await must(a.token, '/api/v1/stores', { namespace: 'demo', name: 'mem' })
  await must(a.token, '/api/v1/stores', { namespace: 'demo', name: 'ro' })
  await must(a.token, '/stores/demo/ro/states', { key: 'motto', value: 'read me' })
  await must(a.token, '/api/v1/agents', {
    namespace: 'demo',
    name: 'keeper',
    system_prompt: 'You remember things.',
    enabled_stores: [
      { store: 'demo/mem', access: 'readwrite' },
      { store: 'demo/ro', access: 'readonly' },
    ],
  })
  await must(a.token, '/api/v1/agents', {
    namespace: 'demo',
    name: 'reader',
    enabled_stores: [{ store: 'demo/*', access: 'readonly' }],
  })
  // an agent of the admin's that B may chat with, enabling A's store demo/mem read-write
  await must(env.adminToken, '/api/v1/agents', {
    namespace: 'pub',
    name: 'helper',
    enabled_stores: [{ store: 'demo/mem', access: 'readwrite' }],
  })
  const role = await post(env.adminToken, '/api/v1/roles', {
    name: 'HelperUsers',
    permissions: {
      'platform.agents/pub/helper.read:all': true,
      'platform.agents/pub/helper.chat:all': true,
      'platform.stores/demo/mem.read_state:all': true,
    },
  })
  if (role.status !== 201) throw new Error(role.text)
  b = await env.createUser('tools-b@test.local', ['Users', 'HelperUsers'])
})

t.test('an agent saves a state, then answers from it', async (t) => {
  llm.reset()
  llm.push(
    {
      tool_calls: [
        {
          id: 's1',
          name: 'save_state',
          arguments: { store: 'demo/mem', key: 'color', value: { favourite: 'blue' }, tags: ['prefs'] },
        },
      ],
    },
    { text: 'Saved.' },
  )
  const saved = await turn(a, 'demo/keeper', 'remember that I like blue')
  t.same(toolNames(0), ['delete_state', 'list_state_keys', 'retrieve_state', 'save_state'], 'the four store tools')
  t.match(saved.results['s1'], { saved: true, created: true, store: 'demo/mem', key: 'color' })
  t.equal(saved.reply, 'Saved.')
  const stored = await env.request('GET', '/stores/demo/mem/states/color', { token: a.token })
  t.match(
    stored.body,
    { value: { favourite: 'blue' }, owner_id: a.id, tags: ['prefs'], visibility: 'private' },
    "written as the chat's user",
  )

  llm.push(
    {
      tool_calls: [
        { id: 'l1', name: 'list_state_keys', arguments: { store: 'demo/mem', prefix: 'col' } },
        { id: 'r1', name: 'retrieve_state', arguments: { store: 'demo/mem', key: 'color' } },
      ],
    },
    { text: 'Your favourite colour is blue.' },
  )
  const answered = await turn(a, 'demo/keeper', 'what is my favourite colour?')
  t.match(answered.results['l1'], { store: 'demo/mem', total: 1, keys: [{ key: 'color', tags: ['prefs'] }] })
  t.match(answered.results['r1'], { store: 'demo/mem', key: 'color', value: { favourite: 'blue' } })
  const second = llm.requests.at(-1)?.body as { messages: { role: string; content: string }[] }
  t.ok(
    second.messages.some((m) => m.role === 'tool' && m.content.includes('"favourite":"blue"')),
    'the state reached the model',
  )
  t.equal(answered.reply, 'Your favourite colour is blue.')

  llm.push(
    { tool_calls: [{ id: 'd1', name: 'delete_state', arguments: { store: 'demo/mem', key: 'color' } }] },
    { text: 'Forgotten.' },
  )
  t.match((await turn(a, 'demo/keeper', 'forget it')).results['d1'], { deleted: true })
  t.equal((await env.request('GET', '/stores/demo/mem/states/color', { token: a.token })).status, 404)
})

t.test('a write through a readonly store is refused as a tool; reads work', async (t) => {
  llm.reset()
  llm.push(
    {
      tool_calls: [
        { id: 'w1', name: 'save_state', arguments: { store: 'demo/ro', key: 'motto', value: 'overwritten' } },
        { id: 'w2', name: 'delete_state', arguments: { store: 'demo/ro', key: 'motto' } },
        { id: 'w3', name: 'retrieve_state', arguments: { store: 'demo/ro', key: 'motto' } },
        { id: 'w4', name: 'retrieve_state', arguments: { store: 'demo/other', key: 'motto' } },
      ],
    },
    { text: 'I may only read that store.' },
  )
  const { results } = await turn(a, 'demo/keeper', 'change the motto')
  t.match(results['w1'], { code: 'state.readonly' })
  t.match(results['w2'], { code: 'state.readonly' })
  t.match(results['w3'], { value: 'read me' })
  t.match(results['w4'], { code: 'store.not_found' }, 'a store the agent does not enable')
  t.match(
    (await env.request('GET', '/stores/demo/ro/states/motto', { token: a.token })).body,
    { value: 'read me' },
    'unchanged',
  )
})

t.test("only readonly stores: no write tools; wildcards expand within the owner's namespaces", async (t) => {
  llm.reset()
  llm.push(
    {
      tool_calls: [
        { id: 'x1', name: 'save_state', arguments: { store: 'demo/mem', key: 'k', value: 1 } },
        { id: 'x2', name: 'list_state_keys', arguments: { store: 'demo/ro' } },
      ],
    },
    { text: 'ok' },
  )
  const { results } = await turn(a, 'demo/reader', 'try')
  t.same(toolNames(0), ['list_state_keys', 'retrieve_state'])
  const sent = llm.requests[0]?.body as {
    tools: { function: { name: string; parameters: { properties: { store: { enum: string[] } } } } }[]
  }
  t.same(sent.tools[0]?.function.parameters.properties.store.enum, ['demo/mem', 'demo/ro'], 'demo/* expanded')
  t.match(results['x1'], { error: /unknown tool/ }, 'a tool that was not offered does not run')
  t.match(results['x2'], { keys: [{ key: 'motto' }] })
})

t.test("the chat's user's permissions apply when the tool runs", async (t) => {
  await must(a.token, '/stores/demo/mem/states', { key: 'a-private', value: 'A only', visibility: 'private' })
  await must(a.token, '/stores/demo/mem/states', { key: 'a-shared', value: 'for readers', visibility: 'shared' })
  llm.reset()
  llm.push(
    {
      tool_calls: [
        { id: 'b1', name: 'retrieve_state', arguments: { key: 'a-shared' } },
        { id: 'b2', name: 'retrieve_state', arguments: { key: 'a-private' } },
        { id: 'b3', name: 'save_state', arguments: { key: 'from-b', value: 1 } },
      ],
    },
    { text: 'done' },
  )
  const { results } = await turn(b, 'pub/helper', 'look')
  t.same(
    toolNames(0),
    ['delete_state', 'list_state_keys', 'retrieve_state', 'save_state'],
    'B may read demo/mem: the tools are offered',
  )
  t.match(results['b1'], { value: 'for readers' }, 'the one store is the default')
  t.match(results['b2'], { code: 'state.not_found' }, "A's private entry stays invisible to B")
  t.match(results['b3'], { code: 'state.forbidden' }, 'the agent enables readwrite, but B holds no write_state')
  t.equal(
    (await env.request('GET', '/stores/demo/mem/states/from-b', { token: a.token })).status,
    404,
    'nothing written',
  )

  // the admin's own chat with the same agent: the admin may write
  llm.reset()
  llm.push(
    { tool_calls: [{ id: 'c1', name: 'save_state', arguments: { key: 'from-admin', value: 2 } }] },
    { text: 'done' },
  )
  t.match((await turn({ token: env.adminToken }, 'pub/helper', 'save')).results['c1'], { saved: true })
})

t.test("a user without access to the agent's stores is offered no store tools", async (t) => {
  const c = await env.createUser('tools-c@test.local', ['Users', 'HelperUsers'])
  await env.request('PATCH', '/api/v1/roles/HelperUsers', {
    body: { permissions: { 'platform.agents/pub/helper.read:all': true, 'platform.agents/pub/helper.chat:all': true } },
  })
  llm.reset()
  llm.push({ tool_calls: [{ id: 'n1', name: 'retrieve_state', arguments: { key: 'a-shared' } }] }, { text: 'no tools' })
  const { results } = await turn(c, 'pub/helper', 'look')
  t.same(toolNames(0), [], 'no tools offered')
  t.match(results['n1'], { error: /unknown tool/ })
})
