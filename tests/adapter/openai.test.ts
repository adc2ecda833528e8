import t, { type Test } from 'tap'
import OpenAI from 'openai'
import type { ChatCompletionChunk } from 'openai/resources/chat/completions'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.ts'

/*
 * The OpenAI-compatible adapter end to end with the official `openai` client against a platform
 * and the fake LLM provider: models (agents and provider models, filtered by permission), agent
 * and provider completions with and without streaming, real usage, tool calls passed through,
 * OpenAI-shaped errors, and an API key as the client's apiKey.
 */
let env: TestPlatform
let llm: FakeLlm
let admin: OpenAI
let b: { id: string; token: string }

const clientFor = (apiKey: string) =>
  new OpenAI({ apiKey, baseURL: `${env.base}/adapters/openai/v1`, maxRetries: 0, timeout: 30_000 })
type Sent = {
  model: string
  messages: { role: string; content: string | null; tool_call_id?: string; tool_calls?: unknown[] }[]
  tools?: { function: { name: string } }[]
  temperature?: number
  max_tokens?: number
}
const lastSent = () => llm.requests.at(-1)?.body as unknown as Sent

/** The promise rejects with an error matching `want` (openai's APIError has status, code, param). */
async function fails(
  t: Test,
  p: Promise<unknown>,
  want: Record<string, unknown> | RegExp,
  msg = 'rejected as expected',
): Promise<void> {
  try {
    await p
    t.fail(`${msg}: it resolved`)
  } catch (err) {
    if (want instanceof RegExp) t.match(String(err), want, msg)
    else t.match(err, want, msg)
  }
}

async function collect(stream: AsyncIterable<ChatCompletionChunk>) {
  const chunks: ChatCompletionChunk[] = []
  for await (const c of stream) chunks.push(c)
  const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')
  const finish = chunks.map((c) => c.choices[0]?.finish_reason).find((f) => f !== null && f !== undefined)
  return { chunks, text, finish, usage: chunks.at(-1)?.usage }
}

t.before(async () => {
  llm = await startFakeLlm()
  t.teardown(() => llm.close())
  env = await startTestPlatform(t)
  const mk = async (path: string, body: unknown) => {
    const r = await env.request('POST', path, { body })
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
    config: { models: ['fake-big', 'org/deep-model'] },
  })
  await mk('/api/v1/llm-providers', {
    name: 'claude',
    provider_type: 'anthropic',
    api_endpoint: llm.endpoint('anthropic'),
    api_key: 'sk-ant',
    default_model: 'claude-fake',
  })
  await mk('/api/v1/agents', {
    namespace: 'demo',
    name: 'helper',
    description: 'a helper',
    system_prompt: 'You are helpful.',
  })
  await mk('/api/v1/agents', {
    namespace: 'demo',
    name: 'typed',
    system_prompt: 'You help {{ customer }}.',
    input_schema: { type: 'object', properties: { customer: { type: 'string' } }, required: ['customer'] },
  })
  admin = clientFor(env.adminToken)
  b = await env.createUser('adapter-b@test.local')
})

t.test('models: agents the caller may chat with and provider models it may call', async (t) => {
  const ids = (await admin.models.list()).data.map((m) => m.id)
  for (const id of [
    'agent:demo/helper',
    'agent:demo/typed',
    'agent:default/default',
    'fake/fake-model',
    'fake/fake-big',
    'fake/org/deep-model',
    'claude/claude-fake',
  ])
    t.ok(ids.includes(id), `admin sees ${id}`)
  const one = await admin.models.retrieve('agent:demo/helper')
  t.match(one, { id: 'agent:demo/helper', object: 'model', owned_by: 'agent:demo' })
  t.match(
    await admin.models.retrieve('fake/org/deep-model'),
    { id: 'fake/org/deep-model', owned_by: 'fake' },
    'a model name holding / (percent-encoded by the client)',
  )
  const plain = await env.request('GET', '/adapters/openai/v1/models/agent:demo/helper')
  t.equal(plain.status, 200, 'the unencoded two-segment form')
  t.match(plain.body, { id: 'agent:demo/helper' })
  t.match((await env.request('GET', '/adapters/openai/v1/models/fake/fake-big')).body, {
    id: 'fake/fake-big',
    owned_by: 'fake',
  })

  const asB = clientFor(b.token)
  const bIds = (await asB.models.list()).data.map((m) => m.id)
  t.same(bIds, ['agent:default/default'], "B sees the default agent only: not the admin's agents, no provider model")
  await fails(t, asB.models.retrieve('agent:demo/helper'), { status: 404 })
  await fails(t, asB.models.retrieve('fake/fake-model'), { status: 404 })
  await fails(t, admin.models.retrieve('fake/not-listed'), { status: 404 }, 'only listed models')
  await fails(t, admin.models.retrieve('gpt-4o'), { status: 404 }, 'no prefix, no model')
})

t.test('a provider model: non-stream completion with the provider usage', async (t) => {
  llm.push({ text: ['Hello', ' there'], usage: { prompt_tokens: 17, completion_tokens: 5 } })
  const r = await admin.chat.completions.create({
    model: 'fake/fake-model',
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
    ],
    temperature: 0.3,
    max_tokens: 50,
  })
  t.equal(r.object, 'chat.completion')
  t.equal(r.model, 'fake/fake-model')
  t.equal(r.choices[0]?.message.content, 'Hello there')
  t.equal(r.choices[0]?.finish_reason, 'stop')
  t.same(r.usage, { prompt_tokens: 17, completion_tokens: 5, total_tokens: 22 }, "the fake's usage")
  const sent = lastSent()
  t.equal(sent.model, 'fake-model', 'the provider prefix is stripped')
  t.same(sent.messages, [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Hi' },
  ])
  t.equal(sent.temperature, 0.3)
  t.equal(sent.max_tokens, 50)
  t.equal(llm.requests.at(-1)?.headers['authorization'], 'Bearer sk-fake', 'the decrypted api_key')
  const sentHeaders = llm.requests.at(-1)?.headers ?? {}
  t.match(
    sentHeaders,
    { 'content-type': 'application/json', accept: 'application/json', 'user-agent': 'agent-platform-llm/1' },
    "the OpenAI client's headers (src/llm/openai.ts)",
  )

  llm.push({ text: 'from claude', usage: { prompt_tokens: 9, completion_tokens: 2 } })
  const c = await admin.chat.completions.create({
    model: 'claude/claude-fake',
    messages: [{ role: 'user', content: 'hi' }],
  })
  t.equal(c.choices[0]?.message.content, 'from claude')
  t.same(
    c.usage,
    { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 },
    'another wire protocol behind the same adapter',
  )
})

t.test('a provider model: streamed chunks, finish reason and the usage chunk', async (t) => {
  llm.push({ text: ['One', ' two', ' three'], usage: { prompt_tokens: 11, completion_tokens: 3 } })
  const out = await collect(
    await admin.chat.completions.create({
      model: 'fake/fake-big',
      messages: [{ role: 'user', content: 'count' }],
      stream: true,
      stream_options: { include_usage: true },
    }),
  )
  t.equal(out.text, 'One two three')
  t.equal(out.finish, 'stop')
  t.equal(out.chunks[0]?.choices[0]?.delta.role, 'assistant', 'the first chunk names the role')
  t.ok(
    out.chunks.every(
      (c) => c.object === 'chat.completion.chunk' && c.model === 'fake/fake-big' && c.id === out.chunks[0]?.id,
    ),
  )
  t.same(out.usage, { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 }, "the fake's usage in the last chunk")
  t.same(out.chunks.at(-1)?.choices, [], 'the usage chunk has no choices')
  t.equal(lastSent().model, 'fake-big')

  // the wire itself: data lines only, ending with [DONE]; no usage chunk unless asked
  llm.push({ text: ['a', 'b'] })
  const res = await fetch(`${env.base}/adapters/openai/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${env.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'fake/fake-model', messages: [{ role: 'user', content: 'x' }], stream: true }),
  })
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /text\/event-stream/)
  const frames = (await res.text()).split('\n\n').filter((f) => f.startsWith('data: '))
  t.equal(frames.at(-1), 'data: [DONE]')
  const objs = frames.slice(0, -1).map((f) => JSON.parse(f.slice(6)) as ChatCompletionChunk)
  t.notOk(
    objs.some((o) => 'usage' in o),
    'no usage without stream_options.include_usage',
  )
  t.equal(objs.map((o) => o.choices[0]?.delta.content ?? '').join(''), 'ab')
})

t.test('the gateway listens on a stream channel only for stream: true (route stream.bodyFlag)', async (t) => {
  const proto = Object.getPrototypeOf(env.platform.nc) as {
    subscribe: (subject: string, ...rest: unknown[]) => unknown
  }
  const original = proto.subscribe
  const live: string[] = []
  proto.subscribe = function (this: unknown, subject: string, ...rest: unknown[]) {
    if (subject.includes('sse.live.')) live.push(subject)
    return original.call(this, subject, ...rest)
  }
  t.teardown(() => {
    proto.subscribe = original
  })
  llm.push({ text: 'plain' })
  const plain = await admin.chat.completions.create({
    model: 'fake/fake-model',
    messages: [{ role: 'user', content: 'x' }],
    stream: false,
  })
  t.equal(plain.choices[0]?.message.content, 'plain')
  t.equal(live.length, 0, 'a non-stream request: no channel subscribed')
  llm.push({ text: ['str', 'eamed'] })
  t.equal(
    (
      await collect(
        await admin.chat.completions.create({
          model: 'fake/fake-model',
          messages: [{ role: 'user', content: 'x' }],
          stream: true,
        }),
      )
    ).text,
    'streamed',
  )
  t.equal(live.length, 1, 'a stream request: its channel, subscribed before the request is forwarded')
})

t.test('a provider model: tools and tool calls pass through, stream and non-stream', async (t) => {
  const tools = [
    {
      type: 'function' as const,
      function: {
        name: 'get_weather',
        description: 'weather in a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    },
  ]
  llm.push({
    tool_calls: [{ id: 'call_w1', name: 'get_weather', arguments: { city: 'Oslo' } }],
    usage: { prompt_tokens: 30, completion_tokens: 8 },
  })
  const r = await admin.chat.completions.create({
    model: 'fake/fake-model',
    messages: [{ role: 'user', content: 'weather in Oslo?' }],
    tools,
    tool_choice: 'auto',
  })
  t.equal(r.choices[0]?.finish_reason, 'tool_calls')
  t.same(r.choices[0]?.message.tool_calls, [
    { id: 'call_w1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
  ])
  t.equal(r.choices[0]?.message.content, null)
  t.same(r.usage, { prompt_tokens: 30, completion_tokens: 8, total_tokens: 38 })
  t.same(
    lastSent().tools?.map((x) => x.function.name),
    ['get_weather'],
    'the tools reached the provider',
  )

  // the client answers the call; the history goes to the provider as given
  llm.push({ text: 'It is sunny in Oslo.' })
  const msg = r.choices[0]?.message
  if (msg === undefined) throw new Error('no message')
  const r2 = await admin.chat.completions.create({
    model: 'fake/fake-model',
    tools,
    messages: [
      { role: 'user', content: 'weather in Oslo?' },
      msg,
      { role: 'tool', tool_call_id: 'call_w1', content: '{"sky":"sunny"}' },
    ],
  })
  t.equal(r2.choices[0]?.message.content, 'It is sunny in Oslo.')
  t.match(lastSent().messages.at(-1), { role: 'tool', tool_call_id: 'call_w1', content: '{"sky":"sunny"}' })
  t.equal(lastSent().messages.at(-2)?.tool_calls?.length, 1)

  // streamed: two parallel calls with interleaved argument pieces
  llm.push({
    tool_calls: [
      { id: 'call_a', name: 'get_weather', arguments: { city: 'Rome' } },
      { id: 'call_b', name: 'get_weather', arguments: { city: 'Lima' } },
    ],
    interleave: true,
  })
  const out = await collect(
    await admin.chat.completions.create({
      model: 'fake/fake-model',
      messages: [{ role: 'user', content: 'Rome and Lima' }],
      tools,
      stream: true,
    }),
  )
  t.equal(out.finish, 'tool_calls')
  const calls = new Map<number, { id: string; name: string; args: string }>()
  for (const c of out.chunks) {
    for (const d of c.choices[0]?.delta.tool_calls ?? []) {
      const cur = calls.get(d.index) ?? { id: '', name: '', args: '' }
      calls.set(d.index, {
        id: d.id ?? cur.id,
        name: d.function?.name ?? cur.name,
        args: cur.args + (d.function?.arguments ?? ''),
      })
    }
  }
  t.same(
    [...calls.values()],
    [
      { id: 'call_a', name: 'get_weather', args: '{"city":"Rome"}' },
      { id: 'call_b', name: 'get_weather', args: '{"city":"Lima"}' },
    ],
  )

  // tool_choice none: no tools offered; a named function: only that one
  llm.push({ text: 'no tools' })
  await admin.chat.completions.create({
    model: 'fake/fake-model',
    messages: [{ role: 'user', content: 'x' }],
    tools,
    tool_choice: 'none',
  })
  t.equal(lastSent().tools, undefined)
})

t.test('an agent model: the turn runs over the given messages (non-stream)', async (t) => {
  llm.push({ text: ['Sure', ', done.'], usage: { prompt_tokens: 21, completion_tokens: 4 } })
  const r = await admin.chat.completions.create({
    model: 'agent:demo/helper',
    messages: [
      { role: 'user', content: 'first question' },
      { role: 'assistant', content: 'first answer' },
      { role: 'user', content: 'second question' },
    ],
  })
  t.equal(r.model, 'agent:demo/helper')
  t.equal(r.choices[0]?.message.content, 'Sure, done.')
  t.equal(r.choices[0]?.finish_reason, 'stop')
  t.same(
    r.usage,
    { prompt_tokens: 21, completion_tokens: 4, total_tokens: 25 },
    "the turn's usage (all its LLM rounds)",
  )
  const sent = lastSent()
  t.equal(sent.model, 'fake-model', "the agent's provider and model")
  t.same(
    sent.messages.map((m) => [m.role, m.content]),
    [
      ['system', 'You are helpful.'],
      ['user', 'first question'],
      ['assistant', 'first answer'],
      ['user', 'second question'],
    ],
    "the agent's system prompt, then the request's history",
  )
  const chats = (await env.request('GET', '/chats')).body as unknown[]
  t.equal(chats.length, 0, 'the internal chat is not listed')
  const rows = await env.sql<{ internal: boolean; expires: boolean }>(
    "select internal, expires_at is not null as expires from chats where agent_name = 'helper'",
  )
  t.ok(rows.length > 0 && rows.every((x) => x.internal && x.expires), 'internal and ephemeral')
  // the chat and the request's earlier messages are written by one statement, in the order given
  const stored = await env.sql<{ role: string; content: string; dated: boolean }>(
    "select m.role, m.content, c.last_message_at is not null as dated from chat_messages m join chats c on c.id = m.chat_id where c.id = (select chat_id from chat_messages where content = 'first question' order by created_at desc limit 1) order by m.seq",
  )
  t.same(
    stored.map((x) => [x.role, x.content]),
    [
      ['user', 'first question'],
      ['assistant', 'first answer'],
      ['user', 'second question'],
      ['assistant', 'Sure, done.'],
    ],
    "the internal chat holds the request's messages in order, then the turn's reply",
  )
  t.ok(
    stored.every((x) => x.dated),
    'the chat is dated by its messages',
  )

  // input variables for an agent with an input_schema (`input`, not OpenAI)
  await fails(
    t,
    admin.chat.completions.create({ model: 'agent:demo/typed', messages: [{ role: 'user', content: 'hi' }] }),
    { status: 422 },
  )
  llm.push({ text: 'Hello ACME' })
  const typed = await admin.chat.completions.create({
    model: 'agent:demo/typed',
    messages: [{ role: 'user', content: 'hi' }],
    input: { customer: 'ACME' },
  } as OpenAI.ChatCompletionCreateParamsNonStreaming)
  t.equal(typed.choices[0]?.message.content, 'Hello ACME')
  t.same(lastSent().messages[0], { role: 'system', content: 'You help ACME.' })
})

t.test('an agent model: streamed', async (t) => {
  llm.push({ text: ['Streaming', ' from', ' the', ' agent'] })
  const out = await collect(
    await admin.chat.completions.create({
      model: 'agent:demo/helper',
      messages: [{ role: 'user', content: 'stream please' }],
      stream: true,
      stream_options: { include_usage: true },
    }),
  )
  t.equal(out.text, 'Streaming from the agent')
  t.equal(out.finish, 'stop')
  t.ok(out.chunks.filter((c) => (c.choices[0]?.delta.content ?? '') !== '').length >= 2, 'the reply arrives in pieces')
  t.same(out.chunks.at(-1)?.choices, [], 'a usage chunk ends the stream when asked for')

  // a failing turn ends the stream with an error (the provider refuses)
  llm.push({ error: { status: 500 } })
  await fails(
    t,
    collect(
      await admin.chat.completions.create({
        model: 'agent:demo/helper',
        messages: [{ role: 'user', content: 'fail' }],
        stream: true,
      }),
    ),
    /LLM provider|502|failed|error/i,
  )
})

t.test('permissions and errors in OpenAI shape', async (t) => {
  const asB = clientFor(b.token)
  await fails(
    t,
    asB.chat.completions.create({ model: 'agent:demo/helper', messages: [{ role: 'user', content: 'hi' }] }),
    { status: 404, code: 'model_not_found' },
    "B may not use the admin's agent",
  )
  await fails(
    t,
    asB.chat.completions.create({ model: 'fake/fake-model', messages: [{ role: 'user', content: 'hi' }] }),
    { status: 404 },
    'B may not call provider models',
  )
  await fails(
    t,
    asB.chat.completions.create({
      model: 'agent:demo/helper',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    }),
    { status: 404 },
    'nor stream from it',
  )

  // a role granting one provider, and read without chat on an agent
  const role = await env.request('POST', '/api/v1/roles', {
    body: {
      name: 'FakeLlm',
      permissions: { 'platform.llm/fake.chat:all': true, 'platform.agents/demo/helper.read:all': true },
    },
  })
  t.equal(role.status, 201, role.text)
  const c = await env.createUser('adapter-c@test.local', ['Users', 'FakeLlm'])
  const asC = clientFor(c.token)
  const cIds = (await asC.models.list()).data.map((m) => m.id)
  t.ok(
    cIds.includes('fake/fake-model') && !cIds.some((id) => id.startsWith('claude/')),
    'one provider granted, not the other',
  )
  t.notOk(cIds.includes('agent:demo/helper'), 'readable but not chat-able: not listed')
  llm.push({ text: 'ok', usage: { prompt_tokens: 1, completion_tokens: 1 } })
  t.equal(
    (await asC.chat.completions.create({ model: 'fake/fake-model', messages: [{ role: 'user', content: 'hi' }] }))
      .choices[0]?.message.content,
    'ok',
  )
  await fails(
    t,
    asC.chat.completions.create({ model: 'claude/claude-fake', messages: [{ role: 'user', content: 'hi' }] }),
    { status: 404 },
  )
  await fails(
    t,
    asC.chat.completions.create({ model: 'agent:demo/helper', messages: [{ role: 'user', content: 'hi' }] }),
    { status: 403, code: 'permission_denied' },
  )

  // request errors
  const raw = await env.request('POST', '/adapters/openai/v1/chat/completions', {
    body: { model: 'fake/fake-model', messages: [] },
  })
  t.equal(raw.status, 400)
  t.match(
    raw.body,
    { error: { type: 'invalid_request_error', param: 'messages', message: /messages/ } },
    'the OpenAI error shape',
  )
  await fails(t, admin.chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'hi' }] }), {
    status: 404,
    code: 'model_not_found',
  })
  await fails(
    t,
    admin.chat.completions.create({
      model: 'fake/fake-model',
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'http://x/y.png' } }] }],
    }),
    { status: 400, code: 'unsupported_content' },
  )
  await fails(
    t,
    admin.chat.completions.create({
      model: 'agent:demo/helper',
      messages: [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: 'b' },
      ],
    }),
    { status: 400, param: 'messages' },
    'an agent answers a user message',
  )
  await fails(
    t,
    admin.chat.completions.create({
      model: 'fake/fake-model',
      messages: [{ role: 'tool', tool_call_id: 'x', content: 'r' }],
    }),
    { status: 400 },
    'a tool result without its call',
  )
  await fails(t, clientFor('not-a-token').models.list(), { status: 401 })

  // provider failures: before the first event an HTTP error, for streams too
  llm.push({ error: { status: 503 } })
  await fails(
    t,
    admin.chat.completions.create({ model: 'fake/fake-model', messages: [{ role: 'user', content: 'hi' }] }),
    { status: 502 },
  )
  llm.push({ error: { status: 401 } })
  await fails(
    t,
    admin.chat.completions.create({
      model: 'fake/fake-model',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    }),
    { status: 502 },
  )
  // … and after it an error event that the client raises
  llm.push({ text: ['partial'], stream_error: { type: 'server_error', message: 'boom' }, chunk_delay_ms: 30 })
  await fails(
    t,
    collect(
      await admin.chat.completions.create({
        model: 'fake/fake-model',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      }),
    ),
    /boom/,
  )
})

t.test('a platform API key as the client apiKey', async (t) => {
  const created = await env.request('POST', '/api/v1/api-keys', {
    body: {
      name: 'openai-client',
      permissions: {
        'platform.agents/demo/*.read:all': true,
        'platform.agents/demo/*.chat:all': true,
        'platform.llm.chat:all': true,
      },
    },
  })
  t.equal(created.status, 201, created.text)
  const key = (created.body as { key: string }).key
  const viaKey = clientFor(key)
  const ids = (await viaKey.models.list()).data.map((m) => m.id)
  t.ok(ids.includes('agent:demo/helper') && ids.includes('fake/fake-model'))
  t.notOk(ids.includes('agent:default/default'), "the key's scope limits the list")
  llm.push({ text: 'via key', usage: { prompt_tokens: 4, completion_tokens: 2 } })
  const r = await viaKey.chat.completions.create({
    model: 'fake/fake-model',
    messages: [{ role: 'user', content: 'hi' }],
  })
  t.equal(r.choices[0]?.message.content, 'via key')
  llm.push({ text: 'agent via key' })
  const a = await viaKey.chat.completions.create({
    model: 'agent:demo/helper',
    messages: [{ role: 'user', content: 'hi' }],
  })
  t.equal(a.choices[0]?.message.content, 'agent via key')
  const narrow = await env.request('POST', '/api/v1/api-keys', {
    body: {
      name: 'agents-only',
      permissions: { 'platform.agents/*/*.read:all': true, 'platform.agents/*/*.chat:all': true },
    },
  })
  const narrowIds = (await clientFor((narrow.body as { key: string }).key).models.list()).data.map((m) => m.id)
  t.notOk(
    narrowIds.some((id) => id.startsWith('fake/')),
    'a key without platform.llm lists no provider model',
  )
})
