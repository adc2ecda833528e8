import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.ts'

/*
 * Agent fields that shape what the provider gets, checked on the fake LLM's recorded requests:
 * `initial_messages` (after the system prompt, before the history, on every turn, never stored),
 * `temperature` and `max_tokens` (in the request body), and `function_parameters` (defaults
 * pre-filled into a tool call, string values rendered with the chat's input, the model's own
 * arguments winning).
 */
let env: TestPlatform
let llm: FakeLlm
type Body = {
  messages: { role: string; content: string }[]
  temperature?: number
  max_tokens?: number
  tools?: { function: { name: string; parameters: unknown } }[]
}
const post = async (path: string, body: unknown) => env.request('POST', path, { body })
const mk = async (path: string, body: unknown) => {
  const r = await post(path, body)
  if (r.status !== 201) throw new Error(`${path}: ${r.text}`)
  return r.body as { id: string }
}
const sentSince = (n: number) => llm.requests.slice(n).map((r) => r.body as unknown as Body)

t.before(async () => {
  llm = await startFakeLlm()
  t.teardown(() => llm.close())
  env = await startTestPlatform(t)
  await mk('/api/v1/llm-providers', {
    name: 'fake',
    provider_type: 'openai',
    api_endpoint: llm.endpoint('openai'),
    api_key: 'sk-fake',
    default_model: 'fake-model',
    is_default: true,
  })
  await mk('/api/v1/functions', {
    namespace: 'fx',
    name: 'echo',
    description: 'echoes its input',
    code: 'def handler(input, context):\n    return input\n',
  })
  await mk('/api/v1/agents', {
    namespace: 'fields',
    name: 'primed',
    system_prompt: 'You are primed.',
    temperature: 0.15,
    max_tokens: 77,
    initial_messages: [
      { role: 'user', content: 'What do you do?' },
      { role: 'assistant', content: 'I answer briefly.' },
    ],
  })
  await mk('/api/v1/agents', {
    namespace: 'fields',
    name: 'prefilled',
    system_prompt: 'You call echo.',
    input_schema: { type: 'object', properties: { customer: { type: 'string' } }, required: ['customer'] },
    enabled_functions: ['fx/echo'],
    function_parameters: { 'fx/echo': { greeting: 'Hi {{ customer }}', n: 10, mode: 'preset' } },
  })
})

t.test(
  'initial_messages come after the system prompt and before the history, on every turn, and are not stored',
  async (t) => {
    const chat = await mk('/agents/fields/primed/chats', {})
    const before = llm.requests.length
    llm.push({ text: 'one' }, { text: 'two' })
    t.equal((await post(`/chats/${chat.id}/messages`, { content: 'first' })).status, 200)
    t.equal((await post(`/chats/${chat.id}/messages`, { content: 'second' })).status, 200)
    const [a, b] = sentSince(before)
    const primer = [
      { role: 'system', content: 'You are primed.' },
      { role: 'user', content: 'What do you do?' },
      { role: 'assistant', content: 'I answer briefly.' },
    ]
    t.same(a?.messages, [...primer, { role: 'user', content: 'first' }])
    t.same(b?.messages, [
      ...primer,
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'one' },
      { role: 'user', content: 'second' },
    ])
    const stored = (await env.request('GET', `/chats/${chat.id}`)).body as { messages: { content: string }[] }
    t.same(
      stored.messages.map((m) => m.content),
      ['first', 'one', 'second', 'two'],
      'the history holds only what was said',
    )
  },
)

t.test('temperature and max_tokens reach the provider', async (t) => {
  const chat = await mk('/agents/fields/primed/chats', {})
  const before = llm.requests.length
  llm.push({ text: 'ok' })
  t.equal((await post(`/chats/${chat.id}/messages`, { content: 'hi' })).status, 200)
  const [sent] = sentSince(before)
  t.equal(sent?.temperature, 0.15)
  t.equal(sent?.max_tokens, 77)
  // an agent without them: the default temperature, no max_tokens at all
  const plain = await mk('/api/v1/agents', { namespace: 'fields', name: 'plain', system_prompt: 'Plain.' })
  t.ok(plain.id)
  const other = await mk('/agents/fields/plain/chats', {})
  const n = llm.requests.length
  llm.push({ text: 'ok' })
  await post(`/chats/${other.id}/messages`, { content: 'hi' })
  const [p] = sentSince(n)
  t.equal(p?.temperature, 0.7, 'the schema default')
  t.notOk(p !== undefined && 'max_tokens' in p, 'no max_tokens sent when unset')
})

t.test(
  'function_parameters pre-fill a tool call: templates rendered with the chat input, the model overrides',
  async (t) => {
    const chat = await mk('/agents/fields/prefilled/chats', { input: { customer: 'ACME' } })
    const before = llm.requests.length
    llm.push(
      { tool_calls: [{ id: 'e1', name: 'fx__echo', arguments: { x: 1, mode: 'from-model' } }] },
      { text: 'echoed' },
    )
    const res = await post(`/chats/${chat.id}/messages`, { content: 'echo please' })
    t.match(res.body, { status: 'completed', content: 'echoed' })
    t.same(
      sentSince(before)[0]?.tools?.map((x) => x.function.name),
      ['fx__echo'],
    )
    const full = (await env.request('GET', `/chats/${chat.id}`)).body as {
      messages: { role: string; content: string }[]
    }
    const result = JSON.parse(full.messages.find((m) => m.role === 'tool')?.content ?? 'null') as unknown
    t.same(result, { greeting: 'Hi ACME', n: 10, mode: 'from-model', x: 1 })
  },
)
