import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.ts'

/*
 * Chats end to end against the fake LLM provider: create (input validated), send and wait, tool
 * calls to a function (in parallel), a sub-agent, a skill, hooks, approvals, invoke sessions,
 * archive and delete, and other users' chats invisible.
 */
let env: TestPlatform
let llm: FakeLlm
const post = async (path: string, body: unknown, token?: string) =>
  env.request('POST', path, { body, ...(token === undefined ? {} : { token }) })

t.before(async () => {
  llm = await startFakeLlm()
  t.teardown(() => llm.close())
  env = await startTestPlatform(t)
  const mk = async (path: string, body: unknown) => {
    const r = await post(path, body)
    if (r.status !== 201) throw new Error(`${path}: ${r.text}`)
    return r.body as { id: string }
  }
  await mk('/api/v1/llm-providers', {
    name: 'fake',
    provider_type: 'openai',
    api_endpoint: llm.endpoint('openai'),
    api_key: 'sk-fake',
    default_model: 'fake-model',
    is_default: true,
  })
  await mk('/api/v1/functions', {
    namespace: 'tools',
    name: 'add',
    description: 'adds two numbers',
    code: 'def handler(input, context):\n    return {"sum": input["a"] + input["b"]}\n',
    input_schema: {
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
    },
  })
  await mk('/api/v1/functions', {
    namespace: 'tools',
    name: 'guard',
    code: 'def handler(input, context):\n    c = input["message"]["content"]\n    if "forbidden" in c:\n        return {"block": True, "reply": "I cannot help with that."}\n    return {"content": c.replace("secret", "[redacted]")}\n',
  })
  await mk('/api/v1/functions', {
    namespace: 'tools',
    name: 'pay',
    description: 'pays',
    requires_approval: true,
    code: 'def handler(input, context):\n    return {"paid": input.get("amount")}\n',
  })
  await mk('/api/v1/skills', {
    namespace: 'kb',
    name: 'style',
    description: 'house style',
    content: 'Always answer in haiku.',
  })
  await mk('/api/v1/agents', {
    namespace: 'demo',
    name: 'helper',
    description: 'a helper',
    system_prompt: 'You help {{ customer }}.',
    input_schema: { type: 'object', properties: { customer: { type: 'string' } }, required: ['customer'] },
  })
  await mk('/api/v1/agents', {
    namespace: 'demo',
    name: 'boss',
    system_prompt: 'You are the boss.',
    enabled_functions: ['tools/add', 'tools/pay'],
    enabled_agents: ['demo/worker'],
    enabled_skills: [{ skill: 'kb/style', preload: true }],
    hooks: {
      on_user_message: [{ function: 'tools/guard', async: false, on_timeout: 'block' }],
      on_assistant_message: [],
    },
  })
  await mk('/api/v1/agents', { namespace: 'demo', name: 'worker', system_prompt: 'You do the work.' })
})

t.test('create validates the input; a message gets the rendered system prompt and a reply', async (t) => {
  const bad = await post('/agents/demo/helper/chats', { input: {} })
  t.equal(bad.status, 422, 'input_schema applies')
  const chat = (await post('/agents/demo/helper/chats', { input: { customer: 'ACME' }, title: 'first' })).body as {
    id: string
  }
  llm.push({ text: ['Hello', ' ACME'] })
  const res = await post(`/chats/${chat.id}/messages`, { content: 'hi' })
  t.equal(res.status, 200, res.text)
  t.match(res.body, { role: 'assistant', content: 'Hello ACME', status: 'completed' })
  const sent = llm.requests.at(-1)?.body as { messages: { role: string; content: string }[] }
  t.same(sent.messages[0], { role: 'system', content: 'You help ACME.' })
  t.same(sent.messages.at(-1), { role: 'user', content: 'hi' })
  const full = (await env.request('GET', `/chats/${chat.id}`)).body as { messages: { role: string }[] }
  t.same(
    full.messages.map((m) => m.role),
    ['user', 'assistant'],
  )
})

t.test('tool calls run in parallel, a sub-agent answers, skills are preloaded, hooks rewrite', async (t) => {
  const chat = (await post('/agents/demo/boss/chats', {})).body as { id: string }
  llm.push(
    {
      tool_calls: [
        { id: 'c1', name: 'tools__add', arguments: { a: 2, b: 3 } },
        { id: 'c2', name: 'call_agent__demo__worker', arguments: { message: 'do it' } },
      ],
    },
    { text: 'done by worker' }, // the sub-agent's turn
    { text: 'The sum is 5 and the worker is done.' },
  )
  const res = await post(`/chats/${chat.id}/messages`, { content: 'add and delegate, my secret is 42' })
  t.equal(res.status, 200, res.text)
  t.match(res.body, { content: 'The sum is 5 and the worker is done.' })
  const first = llm.requests.find((r) => JSON.stringify(r.body).includes('You are the boss'))?.body as {
    messages: { role: string; content: string }[]
    tools: { function: { name: string } }[]
  }
  t.match(first.messages[0]?.content, /Always answer in haiku/, 'the preloaded skill is in the system prompt')
  t.same(first.tools.map((x) => x.function.name).sort(), ['call_agent__demo__worker', 'tools__add', 'tools__pay'])
  t.match(first.messages.at(-1)?.content, /my \[redacted\] is 42/, 'the on_user_message hook replaced the content')
  const full = (await env.request('GET', `/chats/${chat.id}`)).body as {
    messages: { role: string; content: string; tool_call_id: string }[]
  }
  const results = Object.fromEntries(
    full.messages.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, JSON.parse(m.content) as unknown]),
  )
  t.same(results['c1'], { sum: 5 })
  t.same(results['c2'], { reply: 'done by worker' })
})

t.test('a blocking hook answers instead of the LLM', async (t) => {
  const chat = (await post('/agents/demo/boss/chats', {})).body as { id: string }
  const before = llm.requests.length
  const res = await post(`/chats/${chat.id}/messages`, { content: 'something forbidden' })
  t.match(res.body, { content: 'I cannot help with that.', status: 'blocked' })
  t.equal(llm.requests.length, before, 'the LLM was not called')
})

t.test('a tool that requires approval pauses the turn until the user decides', async (t) => {
  const chat = (await post('/agents/demo/boss/chats', {})).body as { id: string }
  llm.push({ tool_calls: [{ id: 'p1', name: 'tools__pay', arguments: { amount: 10 } }] }, { text: 'Paid.' })
  const res = await post(`/chats/${chat.id}/messages`, { content: 'pay 10' })
  t.match(res.body, { status: 'awaiting_approval' })
  const waiting = (await env.request('GET', `/chats/${chat.id}`)).body as { pending_approvals: unknown[] }
  t.match(waiting.pending_approvals, [
    { tool_call_id: 'p1', function_namespace: 'tools', function_name: 'pay', arguments: { amount: 10 } },
  ])
  const ok = await post(`/chats/${chat.id}/approve-tool/p1`, { approved: true })
  t.equal(ok.status, 202, ok.text)
  t.match(ok.body, { status: 'approved', tool_call_id: 'p1' })
  const again = await post(`/chats/${chat.id}/approve-tool/p1`, { approved: false })
  t.equal(again.status, 409, 'decided once')
  let msgs: { role: string; content: string }[] = []
  for (let i = 0; i < 100; i++) {
    msgs = ((await env.request('GET', `/chats/${chat.id}`)).body as { messages: { role: string; content: string }[] })
      .messages
    if (msgs.at(-1)?.content === 'Paid.') break
    await new Promise((r) => setTimeout(r, 100))
  }
  t.same(JSON.parse(msgs.find((m) => m.role === 'tool')?.content ?? 'null'), { paid: 10 }, 'the approved call ran')
  t.equal(msgs.at(-1)?.content, 'Paid.')
})

t.test('a call awaiting approval whose arguments are not a JSON object is shown with empty arguments', async (t) => {
  const chat = (await post('/agents/demo/boss/chats', {})).body as { id: string }
  llm.push({ tool_calls: [{ id: 'p2', name: 'tools__pay', arguments: '[10]' }] })
  const res = await post(`/chats/${chat.id}/messages`, { content: 'pay [10]' })
  t.match(res.body, { status: 'awaiting_approval' })
  const waiting = await env.request('GET', `/chats/${chat.id}`)
  t.equal(waiting.status, 200, waiting.text)
  t.same((waiting.body as { pending_approvals: unknown[] }).pending_approvals, [
    { tool_call_id: 'p2', function_namespace: 'tools', function_name: 'pay', arguments: {} },
  ])
})

t.test('invoke keeps one chat per session_key; reset starts a new one', async (t) => {
  llm.push({ text: 'one' }, { text: 'two' }, { text: 'three' })
  const a = (await post('/agents/demo/helper/invoke', { message: 'm1', session_key: 's1', input: { customer: 'X' } }))
    .body as { reply: string; chat_id: string }
  const b = (await post('/agents/demo/helper/invoke', { message: 'm2', session_key: 's1' })).body as {
    reply: string
    chat_id: string
  }
  t.equal(a.reply, 'one')
  t.equal(b.chat_id, a.chat_id, 'same session, same chat')
  const c = (
    await post('/agents/demo/helper/invoke', {
      message: 'm3',
      session_key: 's1',
      reset: true,
      input: { customer: 'Y' },
    })
  ).body as { chat_id: string }
  t.not(c.chat_id, a.chat_id, 'reset starts a new chat')
  const list = (await env.request('GET', '/chats')).body as { id: string }[]
  t.notOk(
    list.some((x) => x.id === a.chat_id),
    'the old session chat is archived',
  )
  t.ok(
    ((await env.request('GET', '/chats?include_archived=true')).body as { id: string }[]).some(
      (x) => x.id === a.chat_id,
    ),
  )
})

t.test("another user's chat is invisible; archive and delete", async (t) => {
  const chat = (await post('/agents/demo/helper/chats', { input: { customer: 'Z' } })).body as { id: string }
  const b = await env.createUser('chat-b@test.local')
  t.equal((await env.request('GET', `/chats/${chat.id}`, { token: b.token })).status, 404)
  t.equal((await post(`/chats/${chat.id}/messages`, { content: 'hi' }, b.token)).status, 404)
  t.equal(
    (await post('/agents/demo/helper/chats', { input: { customer: 'Z' } }, b.token)).status,
    404,
    "B may not chat with the admin's agent",
  )
  t.equal((await env.request('PUT', `/chats/${chat.id}`, { body: { archived: true } })).status, 200)
  t.equal((await env.request('DELETE', `/chats/${chat.id}`)).status, 204)
  t.equal((await env.request('GET', `/chats/${chat.id}`)).status, 404)
})

t.test(
  'speaking again in a chat: the owner is remembered, a chat deleted meanwhile is still 404, others still 404',
  async (t) => {
    const chat = (await post('/agents/demo/helper/chats', { input: { customer: 'Y' } })).body as { id: string }
    const first = await post(`/chats/${chat.id}/messages`, { content: 'hi' })
    t.equal(first.status, 200, first.text)
    const again = await post(`/chats/${chat.id}/messages`, { content: 'again' })
    t.equal(again.status, 200, 'the owner speaks again (no read at the door)')
    const b = await env.createUser('chat-speaker-b@test.local')
    t.equal(
      (await post(`/chats/${chat.id}/messages`, { content: 'me too' }, b.token)).status,
      404,
      'another user still may not, after the owner spoke',
    )
    const messages = (
      (await env.request('GET', `/chats/${chat.id}`)).body as { messages: { content: string | null }[] }
    ).messages
    t.notOk(
      messages.some((m) => m.content === 'me too'),
      "B's message was not stored",
    )
    t.equal((await env.request('DELETE', `/chats/${chat.id}`)).status, 204)
    const gone = await post(`/chats/${chat.id}/messages`, { content: 'still there?' })
    t.equal(gone.status, 404, `a chat deleted after its owner spoke in it: ${gone.text}`)
    t.match(gone.body, { code: 'chat.not_found' })
  },
)
