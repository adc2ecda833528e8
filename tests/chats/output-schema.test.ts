import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.ts'

/*
 * An agent's output_schema against the fake LLM: the schema reaches the provider as
 * response_format (OpenAI wire) / format (Ollama) / a system instruction (Anthropic); a valid
 * answer passes; an invalid one is retried once with the problem told to the model; invalid twice
 * ends the turn with 422 `agent.output_invalid` (the user message stays, no assistant message is
 * stored). The OpenAI-compatible adapter: the same for an agent model, and a client's own
 * response_format passed through to a provider model.
 */
let env: TestPlatform
let llm: FakeLlm
const post = async (path: string, body: unknown) => env.request('POST', path, { body })
type Sent = {
  model: string
  messages: { role: string; content: string }[]
  response_format?: unknown
  format?: unknown
  system?: string
}
const sentBodies = (from: number) => llm.requests.slice(from).map((r) => r.body as unknown as Sent)

const SCHEMA = {
  type: 'object',
  properties: { city: { type: 'string' }, temp: { type: 'number' } },
  required: ['city', 'temp'],
  additionalProperties: false,
}

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
  const ollama = await mk('/api/v1/llm-providers', {
    name: 'local',
    provider_type: 'ollama',
    api_endpoint: llm.endpoint('ollama'),
    default_model: 'llama',
  })
  const claude = await mk('/api/v1/llm-providers', {
    name: 'claude',
    provider_type: 'anthropic',
    api_endpoint: llm.endpoint('anthropic'),
    api_key: 'sk-ant',
    default_model: 'claude-x',
  })
  await mk('/api/v1/agents', {
    namespace: 'demo',
    name: 'weather',
    system_prompt: 'You report the weather.',
    output_schema: SCHEMA,
  })
  await mk('/api/v1/agents', {
    namespace: 'demo',
    name: 'weather-ollama',
    llm_provider_id: ollama.id,
    output_schema: SCHEMA,
  })
  await mk('/api/v1/agents', {
    namespace: 'demo',
    name: 'weather-claude',
    system_prompt: 'You report the weather.',
    llm_provider_id: claude.id,
    output_schema: SCHEMA,
  })
  await mk('/api/v1/agents', { namespace: 'demo', name: 'plain' })
})

const newChat = async (agent: string) => ((await post(`/agents/demo/${agent}/chats`, {})).body as { id: string }).id

t.test('the schema reaches the provider and a valid answer passes', async (t) => {
  const chat = await newChat('weather')
  const from = llm.requests.length
  llm.push({ text: ['{"city": "Oslo",', ' "temp": 3}'] })
  const res = await post(`/chats/${chat}/messages`, { content: 'weather in Oslo?' })
  t.equal(res.status, 200, res.text)
  t.match(res.body, { role: 'assistant', status: 'completed' })
  t.same(JSON.parse((res.body as { content: string }).content), { city: 'Oslo', temp: 3 })
  const sent = sentBodies(from)
  t.equal(sent.length, 1, 'one LLM call')
  t.same(
    sent[0]?.response_format,
    { type: 'json_schema', json_schema: { name: 'demo_weather', schema: SCHEMA } },
    'OpenAI wire: response_format json_schema',
  )
})

t.test('an answer in a code fence is accepted and stored without the fence', async (t) => {
  const chat = await newChat('weather')
  llm.push({ text: '```json\n{"city": "Rome", "temp": 21}\n```' })
  const res = await post(`/chats/${chat}/messages`, { content: 'weather in Rome?' })
  t.equal(res.status, 200, res.text)
  t.equal((res.body as { content: string }).content, '{"city": "Rome", "temp": 21}')
})

t.test('an invalid answer is retried once with the problem, and the valid second answer is the reply', async (t) => {
  const chat = await newChat('weather')
  const from = llm.requests.length
  llm.push({ text: 'It is sunny in Paris.' }, { text: '{"city": "Paris", "temp": 18}' })
  const res = await post(`/chats/${chat}/messages`, { content: 'weather in Paris?' })
  t.equal(res.status, 200, res.text)
  t.same(JSON.parse((res.body as { content: string }).content), { city: 'Paris', temp: 18 })
  const sent = sentBodies(from)
  t.equal(sent.length, 2, 'one retry')
  const retry = sent[1]?.messages ?? []
  t.same(
    retry.at(-2),
    { role: 'assistant', content: 'It is sunny in Paris.' },
    'the invalid answer is in the retry context',
  )
  t.match(retry.at(-1), {
    role: 'user',
    content: /does not match the required output JSON Schema: the answer is not valid JSON/,
  })
  t.ok(sent[1]?.response_format !== undefined, 'the retry asks for structured output too')
  const stored = (
    (await env.request('GET', `/chats/${chat}`)).body as { messages: { role: string; content: string }[] }
  ).messages
  t.same(
    stored.map((m) => m.role),
    ['user', 'assistant'],
    'the retry exchange is not stored',
  )
  t.equal(stored[1]?.content, '{"city": "Paris", "temp": 18}')
})

t.test('invalid twice ends the turn with agent.output_invalid (422); the user message stays', async (t) => {
  const chat = await newChat('weather')
  const from = llm.requests.length
  llm.push({ text: '{"city": "Bern"}' }, { text: '{"city": "Bern", "temp": "cold"}' })
  const res = await post(`/chats/${chat}/messages`, { content: 'weather in Bern?' })
  t.equal(res.status, 422, res.text)
  t.match(res.body, { code: 'agent.output_invalid', detail: /\/temp must be number/ })
  t.match(
    sentBodies(from)[1]?.messages.at(-1)?.content,
    /must have required property 'temp'/,
    'the first problem was told to the model',
  )
  t.equal(llm.requests.length - from, 2, 'no third call')
  const stored = (
    (await env.request('GET', `/chats/${chat}`)).body as { messages: { role: string; content: string }[] }
  ).messages
  t.same(
    stored.map((m) => m.role),
    ['user'],
    'no assistant message is stored for an invalid answer',
  )
  // the chat takes the next message as usual
  llm.push({ text: '{"city": "Bern", "temp": 7}' })
  const next = await post(`/chats/${chat}/messages`, { content: 'again?' })
  t.equal(next.status, 200, next.text)
})

t.test('Ollama gets the schema as format, Anthropic as an instruction in system', async (t) => {
  const from = llm.requests.length
  llm.push({ text: '{"city": "Lima", "temp": 19}' }, { text: '{"city": "Kyiv", "temp": 2}' })
  const a = await post(`/chats/${await newChat('weather-ollama')}/messages`, { content: 'Lima?' })
  t.equal(a.status, 200, a.text)
  const b = await post(`/chats/${await newChat('weather-claude')}/messages`, { content: 'Kyiv?' })
  t.equal(b.status, 200, b.text)
  const [ollama, claude] = sentBodies(from)
  t.same(ollama?.format, SCHEMA, 'ollama: format is the schema')
  t.notOk(claude !== undefined && 'response_format' in claude, 'anthropic: no response_format on its wire')
  t.match(
    claude?.system,
    /^You report the weather\.\n\nAnswer with one JSON value only .*JSON Schema:\n\{"type":"object"/s,
  )
})

t.test('an agent without output_schema sends no response_format and answers text', async (t) => {
  const from = llm.requests.length
  llm.push({ text: 'just text' })
  const res = await post(`/chats/${await newChat('plain')}/messages`, { content: 'hi' })
  t.equal(res.status, 200, res.text)
  t.equal((res.body as { content: string }).content, 'just text')
  t.notOk('response_format' in (sentBodies(from)[0] ?? {}))
})

t.test(
  'adapter: an agent model is held to its output_schema; a provider model gets the client response_format',
  async (t) => {
    const url = '/adapters/openai/v1/chat/completions'
    let from = llm.requests.length
    llm.push({ text: 'nope' }, { text: '{"city": "Oslo", "temp": 1}' })
    const ok = await post(url, { model: 'agent:demo/weather', messages: [{ role: 'user', content: 'Oslo?' }] })
    t.equal(ok.status, 200, ok.text)
    t.equal(
      (ok.body as { choices: { message: { content: string } }[] }).choices[0]?.message.content,
      '{"city": "Oslo", "temp": 1}',
    )
    t.equal(llm.requests.length - from, 2, 'retried once')
    t.match(sentBodies(from)[0]?.response_format, { type: 'json_schema', json_schema: { schema: SCHEMA } })

    llm.push({ text: 'nope' }, { text: 'still nope' })
    const bad = await post(url, { model: 'agent:demo/weather', messages: [{ role: 'user', content: 'Oslo?' }] })
    t.equal(bad.status, 422, bad.text)
    t.match(bad.body, { error: { code: 'agent.output_invalid', type: 'invalid_request_error' } })

    llm.push({ text: 'nope' }, { text: 'still nope' })
    const streamed = await post(url, {
      model: 'agent:demo/weather',
      stream: true,
      messages: [{ role: 'user', content: 'Oslo?' }],
    })
    t.equal(streamed.status, 200, 'a stream starts before the turn ends')
    t.match(streamed.text, /"code":"agent\.output_invalid"/, 'and ends with the error')
    t.notMatch(streamed.text, /still nope/, 'no invalid text was streamed')

    from = llm.requests.length
    const rf = {
      type: 'json_schema',
      json_schema: { name: 'pair', schema: { type: 'object', properties: { a: { type: 'integer' } } }, strict: true },
    }
    llm.push({ text: '{"a": 1}' })
    const direct = await post(url, {
      model: 'fake/fake-model',
      messages: [{ role: 'user', content: 'give a' }],
      response_format: rf,
    })
    t.equal(direct.status, 200, direct.text)
    t.same(sentBodies(from)[0]?.response_format, rf, 'passed through as the client sent it')
  },
)

t.test('an output_schema that is not a valid JSON Schema is refused when the agent is saved', async (t) => {
  const res = await post('/api/v1/agents', {
    namespace: 'demo',
    name: 'broken',
    output_schema: { type: 'no-such-type' },
  })
  t.equal(res.status, 422, res.text)
  t.match(res.text, /output_schema/)
})
