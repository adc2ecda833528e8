import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { eventually } from '../helpers/eventually.ts'
import { startFakeLlm, type FakeLlm, type FakeReply } from '../helpers/fake-llm.ts'

/*
 * Chat behaviour no other file covers, with the fake LLM and the limits set low for this platform:
 * skills offered as tools (`preload: false`, or a bare reference) rather than preloaded;
 * MAX_TOOL_ITERATIONS (2 here): the round after the last allowed one is offered no tools, and a
 * model that calls tools anyway ends the turn with turn.too_many_tool_rounds, the count starting
 * again with the next message; AGENT_DELEGATE_TIMEOUT (1 s here): a blocking parent stops waiting
 * for a slow sub-agent and the model reads the timeout as the tool's result; chats with
 * `expires_in`: 404 once expired and hard-deleted by the sweep (CHAT_EXPIRY_SWEEP_SECONDS 0.2 here)
 * with their messages, while other chats stay.
 */
let env: TestPlatform
let llm: FakeLlm

type Message = { role: string; content: string | null; tool_call_id: string | null }

const post = (path: string, body: unknown, token?: string) =>
  env.request('POST', path, { body, ...(token === undefined ? {} : { token }) })
const ok = async (path: string, body: unknown) => {
  const r = await post(path, body)
  if (r.status >= 300) throw new Error(`${path}: ${String(r.status)} ${r.text}`)
  return r.body as { id: string }
}
const messagesOf = async (chatId: string) =>
  ((await env.request('GET', `/chats/${chatId}`)).body as { messages: Message[] }).messages
const toolResults = (msgs: Message[]) =>
  Object.fromEntries(
    msgs
      .filter((m) => m.role === 'tool')
      .map((m) => [m.tool_call_id, JSON.parse(m.content ?? 'null') as Record<string, unknown>]),
  )
const clock = (id: string): FakeReply => ({ tool_calls: [{ id, name: 'current_time', arguments: {} }] })

t.before(async () => {
  llm = await startFakeLlm()
  t.teardown(() => llm.close())
  env = await startTestPlatform(t, {
    MAX_TOOL_ITERATIONS: '2',
    AGENT_DELEGATE_TIMEOUT: '1',
    CHAT_EXPIRY_SWEEP_SECONDS: '0.2',
  })
  await ok('/api/v1/llm-providers', {
    name: 'fake',
    provider_type: 'openai',
    api_endpoint: llm.endpoint('openai'),
    api_key: 'sk-fake',
    default_model: 'fake-model',
    is_default: true,
  })
  await ok('/api/v1/skills', {
    namespace: 'kb',
    name: 'style',
    description: 'house style',
    content: 'Always answer in haiku.',
  })
  await ok('/api/v1/skills', {
    namespace: 'kb',
    name: 'refunds',
    description: 'refund policy',
    content: 'Refunds within 30 days.',
  })
  await ok('/api/v1/agents', {
    namespace: 'lim',
    name: 'reader',
    system_prompt: 'You read skills.',
    enabled_skills: ['kb/style', { skill: 'kb/refunds', preload: false }],
  })
  await ok('/api/v1/agents', {
    namespace: 'lim',
    name: 'looper',
    system_prompt: 'You loop.',
    system_tools: ['current_time'],
  })
  await ok('/api/v1/agents', {
    namespace: 'lim',
    name: 'boss',
    system_prompt: 'You delegate.',
    enabled_agents: ['lim/slow'],
  })
  await ok('/api/v1/agents', { namespace: 'lim', name: 'slow', system_prompt: 'You are slow.' })
})

t.test('skills enabled without preload are tools the model calls, not part of the prompt', async (t) => {
  const chat = await ok('/agents/lim/reader/chats', {})
  const before = llm.requests.length
  llm.push(
    {
      tool_calls: [
        { id: 'k1', name: 'get_skill__kb__refunds', arguments: {} },
        { id: 'k2', name: 'get_skill__kb__style', arguments: {} },
      ],
    },
    { text: 'Refunds: 30 days.' },
  )
  const res = await post(`/chats/${chat.id}/messages`, { content: 'refund?' })
  t.equal(res.status, 200, res.text)
  t.match(res.body, { content: 'Refunds: 30 days.' })
  const first = llm.requests[before]?.body as {
    messages: { role: string; content: string }[]
    tools: { function: { name: string; description: string } }[]
  }
  t.same(
    first.tools.map((x) => x.function.name).sort(),
    ['get_skill__kb__refunds', 'get_skill__kb__style'],
    'a bare reference and preload: false are both tools',
  )
  t.match(first.tools.find((x) => x.function.name === 'get_skill__kb__refunds')?.function.description, /refund policy/)
  t.notMatch(first.messages[0]?.content, /Refunds within 30 days|haiku/, 'their content is not in the system prompt')
  const results = toolResults(await messagesOf(chat.id))
  t.same(results['k1'], { content: 'Refunds within 30 days.' })
  t.same(results['k2'], { content: 'Always answer in haiku.' })
})

t.test('a skill the chat user may not read is not offered, and calling it anyway is an unknown tool', async (t) => {
  const b = await env.createUser('skills-b@test.local')
  t.equal(
    (
      await post(
        '/api/v1/agents',
        { namespace: 'bee', name: 'reader', system_prompt: 'B reads.', enabled_skills: ['kb/style'] },
        b.token,
      )
    ).status,
    201,
  )
  const chat = (await post('/agents/bee/reader/chats', {}, b.token)).body as { id: string }
  const before = llm.requests.length
  llm.push({ tool_calls: [{ id: 'k3', name: 'get_skill__kb__style', arguments: {} }] }, { text: 'no skill' })
  const res = await post(`/chats/${chat.id}/messages`, { content: 'style?' }, b.token)
  t.equal(res.status, 200, res.text)
  const sent = llm.requests[before]?.body as { tools?: unknown[] } | undefined
  t.ok(sent !== undefined && sent.tools === undefined, "the admin's skill is not offered to B")
  const msgs = ((await env.request('GET', `/chats/${chat.id}`, { token: b.token })).body as { messages: Message[] })
    .messages
  t.match(toolResults(msgs)['k3'], { error: 'unknown tool get_skill__kb__style' })
})

t.test('MAX_TOOL_ITERATIONS: after the last allowed round no tools are offered', async (t) => {
  const chat = await ok('/agents/lim/looper/chats', {})
  const before = llm.requests.length
  llm.push(clock('c1'), clock('c2'), { text: 'enough clocks' })
  const res = await post(`/chats/${chat.id}/messages`, { content: 'time, repeatedly' })
  t.equal(res.status, 200, res.text)
  t.match(res.body, { content: 'enough clocks', status: 'completed' })
  const sent = llm.requests.slice(before).map((r) => (r.body as { tools?: unknown[] }).tools?.length ?? 0)
  t.same(sent, [1, 1, 0], 'two rounds with the tool, the third without')
  t.equal(Object.keys(toolResults(await messagesOf(chat.id))).length, 2, 'both allowed rounds ran their call')
})

t.test(
  'MAX_TOOL_ITERATIONS: a model that calls tools past the limit ends the turn; the next message counts afresh',
  async (t) => {
    const chat = await ok('/agents/lim/looper/chats', {})
    llm.push(clock('d1'), clock('d2'), clock('d3'))
    const res = await post(`/chats/${chat.id}/messages`, { content: 'loop forever' })
    t.equal(res.status, 502, res.text)
    t.match(res.body, { code: 'chat.turn_failed', detail: /MAX_TOOL_ITERATIONS \(2\)/ })
    const msgs = await messagesOf(chat.id)
    t.notOk(Object.hasOwn(toolResults(msgs), 'd3'), 'the call past the limit did not run')
    llm.push(clock('e1'), clock('e2'), { text: 'fine now' })
    const next = await post(`/chats/${chat.id}/messages`, { content: 'again, within the limit' })
    t.equal(next.status, 200, next.text)
    t.match(next.body, { content: 'fine now' }, 'two more rounds are allowed for a new message')
  },
)

t.test('AGENT_DELEGATE_TIMEOUT: the parent stops waiting for a slow sub-agent and goes on', async (t) => {
  const chat = await ok('/agents/lim/boss/chats', {})
  // the sub-agent's provider call answers after 3 s, the parent waits 1 s
  llm.push(
    { tool_calls: [{ id: 'sl1', name: 'call_agent__lim__slow', arguments: { message: 'take your time' } }] },
    { text: 'finally', delay_ms: 3000 },
    { text: 'the helper did not answer in time' },
  )
  const res = await post(`/chats/${chat.id}/messages`, { content: 'ask slow' })
  t.equal(res.status, 200, res.text)
  t.match(res.body, { content: 'the helper did not answer in time', status: 'completed' })
  t.match(
    toolResults(await messagesOf(chat.id))['sl1'],
    { error: /lim\/slow did not answer: timeout/ },
    'the model read the timeout as the result',
  )
})

t.test('expires_in: the chat is gone once expired and the sweep deletes it with its messages', async (t) => {
  const keep = await ok('/agents/lim/reader/chats', {})
  const later = await ok('/agents/lim/reader/chats', { expires_in: 3600 })
  const eph = (await post('/agents/lim/reader/chats', { expires_in: 1, title: 'ephemeral' })).body as {
    id: string
    expires_at: string
    created_at: string
  }
  const lifetime = Date.parse(eph.expires_at) - Date.parse(eph.created_at)
  t.ok(lifetime >= 900 && lifetime <= 1100, `expires_at is about created_at + expires_in (${String(lifetime)} ms)`)
  await eventually(
    async () => ((await env.request('GET', `/chats/${eph.id}`)).status === 404 ? true : undefined),
    'the chat to expire',
  )
  t.notOk(
    ((await env.request('GET', '/chats')).body as { id: string }[]).some((c) => c.id === eph.id),
    'no longer listed',
  )
  t.equal((await post(`/chats/${eph.id}/messages`, { content: 'still there?' })).status, 404, 'no longer spoken in')
  await eventually(
    async () => ((await env.sql('select 1 from chats where id = $1', [eph.id])).length === 0 ? true : undefined),
    'the sweep to delete the row',
  )

  // a chat with messages, its expiry moved into the past (a turn within a 1 s lifetime would race it)
  const talked = await ok('/agents/lim/reader/chats', { expires_in: 3600 })
  llm.push({ text: 'short-lived answer' })
  const res = await post(`/chats/${talked.id}/messages`, { content: 'quick' })
  t.equal(res.status, 200, res.text)
  t.equal((await env.sql('select 1 from chat_messages where chat_id = $1', [talked.id])).length, 2)
  await env.sql("update chats set expires_at = now() - interval '1 second' where id = $1", [talked.id])
  await eventually(
    async () => ((await env.sql('select 1 from chats where id = $1', [talked.id])).length === 0 ? true : undefined),
    'the sweep to delete the chat with messages',
  )
  t.same(await env.sql('select 1 from chat_messages where chat_id = $1', [talked.id]), [], 'its messages went with it')
  const left = await env.sql<{ id: string }>('select id from chats where id = any($1::uuid[])', [[keep.id, later.id]])
  t.equal(left.length, 2, 'a chat without expiry and one expiring later are kept')
})
