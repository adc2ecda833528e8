import t from 'tap'
import { createLlmClient, resolveAgentLlm, resolveProvider, type ProviderEntry } from '../../src/llm/registry.ts'
import { mistralToolCallId } from '../../src/llm/mistral.ts'
import {
  LlmError,
  type ChatEvent,
  type ChatMessage,
  type ChatRequest,
  type LlmClient,
  type ProviderType,
  type ToolDefinition,
} from '../../src/llm/types.ts'
import { blockedReason, guardedStream } from '../../src/platform/outbound-http.ts'
import { startTestPlatform } from '../helpers/env.ts'
import { startFakeLlm, type FakeRequest } from '../helpers/fake-llm.ts'

/*
 * The LLM provider layer against the fake provider (tests/helpers/fake-llm.ts), once per wire
 * protocol: text and tool calls assembled from streamed deltas, usage, what goes on the wire,
 * HTTP errors, timeouts, aborts and malformed streams. Then provider resolution (pure, and from
 * the resources table with the api_key decrypted), and the outbound guard's `allowPrivate`.
 */

const fake = await startFakeLlm()
t.teardown(() => fake.close())

const TYPES: ProviderType[] = ['openai', 'anthropic', 'mistral', 'ollama']

const clientFor = (
  type: ProviderType,
  config: Record<string, unknown> = {},
  options: Parameters<typeof createLlmClient>[1] = {},
): LlmClient =>
  createLlmClient(
    { provider_type: type, api_endpoint: fake.endpoint(type), api_key: `key-${type}`, default_model: null, config },
    options,
  )

const hello = (extra: Partial<ChatRequest> = {}): ChatRequest => ({
  model: 'fake-model',
  messages: [{ role: 'user', content: 'hi' }],
  ...extra,
})

async function run(client: LlmClient, req: ChatRequest): Promise<ChatEvent[]> {
  const events: ChatEvent[] = []
  for await (const e of client.stream(req)) events.push(e)
  return events
}

/** The error a stream throws (with the events seen before it). */
async function failure(
  client: LlmClient,
  req: ChatRequest,
): Promise<{ err: LlmError; events: ChatEvent[]; ms: number }> {
  const events: ChatEvent[] = []
  const started = Date.now()
  try {
    for await (const e of client.stream(req)) events.push(e)
  } catch (err) {
    if (err instanceof LlmError) return { err, events, ms: Date.now() - started }
    throw err
  }
  throw new Error(`the stream did not fail: ${JSON.stringify(events)}`)
}

const doneOf = (events: ChatEvent[]) => {
  const last = events[events.length - 1]
  if (last?.type !== 'done') throw new Error('no done event last')
  return last
}
const lastRequest = (): FakeRequest => fake.requests[fake.requests.length - 1] as FakeRequest

const TOOLS: ToolDefinition[] = [
  {
    name: 'demo__lookup',
    description: 'Looks a city up',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
  {
    name: 'call_agent__demo__helper',
    description: 'Asks the helper agent',
    parameters: { type: 'object', properties: { message: { type: 'string' } } },
  },
]

/** A conversation with a system prompt, two parallel tool calls, their results and a follow-up. */
const CONVERSATION: ChatMessage[] = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Weather in Zürich and Bern?' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id: 'call_abc123', type: 'function', function: { name: 'demo__lookup', arguments: '{"city":"Zürich"}' } },
      { id: 'toolu_01XYZ', type: 'function', function: { name: 'demo__lookup', arguments: '{"city":"Bern"}' } },
    ],
  },
  { role: 'tool', tool_call_id: 'call_abc123', content: '{"temp":21}' },
  { role: 'tool', tool_call_id: 'toolu_01XYZ', content: '{"temp":19}' },
  { role: 'user', content: 'And tomorrow?' },
]

for (const type of TYPES) {
  t.test(type, async (t) => {
    t.beforeEach(() => fake.reset())
    const client = clientFor(type)

    t.test('streamed text is assembled; usage is reported', async (t) => {
      fake.push({ text: ['Hel', 'lo, ', 'wörld ✓'], usage: { prompt_tokens: 21, completion_tokens: 9 } })
      const events = await run(client, hello())
      t.same(
        events.filter((e) => e.type === 'text').map((e) => (e.type === 'text' ? e.delta : '')),
        ['Hel', 'lo, ', 'wörld ✓'],
        'one text event per chunk, in order',
      )
      const done = doneOf(events)
      t.equal(done.content, 'Hello, wörld ✓')
      t.equal(done.finish_reason, 'stop')
      t.same(done.usage, { prompt_tokens: 21, completion_tokens: 9, total_tokens: 30 })
      t.same(done.tool_calls, [])
      t.equal(lastRequest().stream, true, 'the request asked for a stream')
    })

    t.test('frames and UTF-8 characters split across network chunks', async (t) => {
      fake.push({
        text: ['Grüße ', '— ', '日本語 ✓'],
        tool_calls: [{ name: 'demo__lookup', arguments: { city: 'Zürich' } }],
        write_bytes: 3,
      })
      const done = doneOf(await run(client, hello({ tools: TOOLS })))
      t.equal(done.content, 'Grüße — 日本語 ✓')
      t.same(JSON.parse(done.tool_calls[0]?.function.arguments ?? ''), { city: 'Zürich' })
    })

    t.test('a tool call streamed in pieces is assembled into one call with valid JSON', async (t) => {
      const args = { city: 'Zürich', days: 3, tags: ['a', 'b'], nested: { deep: true } }
      fake.push({ tool_calls: [{ name: 'demo__lookup', arguments: args }], argument_chunks: 5 })
      const events = await run(client, hello({ tools: TOOLS }))
      const deltas = events.filter((e) => e.type === 'tool_call_delta')
      if (type === 'openai' || type === 'anthropic')
        t.ok(deltas.length >= 4, `the arguments came in ${String(deltas.length)} deltas`)
      else t.equal(deltas.length, 1, `${type} sends a call whole`)
      const first = deltas[0]
      t.ok(
        first?.type === 'tool_call_delta' &&
          first.index === 0 &&
          first.name === 'demo__lookup' &&
          typeof first.id === 'string',
        'the first delta names the call',
      )
      const done = doneOf(events)
      t.equal(done.finish_reason, 'tool_calls')
      t.equal(done.content, null, 'no text')
      t.equal(done.tool_calls.length, 1)
      const call = done.tool_calls[0]
      t.equal(call?.type, 'function')
      t.equal(call?.function.name, 'demo__lookup')
      t.equal(call?.id, first?.type === 'tool_call_delta' ? first.id : '', 'the id of the first delta')
      t.same(JSON.parse(call?.function.arguments ?? ''), args)
      t.equal(
        deltas.map((d) => (d.type === 'tool_call_delta' ? (d.arguments_delta ?? '') : '')).join(''),
        call?.function.arguments,
        'the deltas concatenate to the arguments',
      )
    })

    t.test('two parallel tool calls (with text before them)', async (t) => {
      fake.push({
        text: 'Checking both.',
        tool_calls: [
          { name: 'demo__lookup', arguments: { city: 'Zürich' } },
          { name: 'call_agent__demo__helper', arguments: { message: 'compare "these"' } },
        ],
        interleave: true,
      })
      const done = doneOf(await run(client, hello({ tools: TOOLS })))
      t.equal(done.content, 'Checking both.')
      t.equal(done.finish_reason, 'tool_calls')
      t.same(
        done.tool_calls.map((c) => [c.function.name, JSON.parse(c.function.arguments) as unknown]),
        [
          ['demo__lookup', { city: 'Zürich' }],
          ['call_agent__demo__helper', { message: 'compare "these"' }],
        ],
      )
      t.equal(new Set(done.tool_calls.map((c) => c.id)).size, 2, 'distinct ids')
    })

    t.test('complete() answers the whole reply', async (t) => {
      fake.push({ text: ['a', 'b'], tool_calls: [{ name: 'demo__lookup', arguments: '{}' }] })
      const result = await client.complete(hello({ tools: TOOLS }))
      t.equal(result.content, 'ab')
      t.equal(result.tool_calls[0]?.function.arguments, '{}')
      t.equal(result.tool_calls[0]?.function.name, 'demo__lookup')
      t.equal(result.finish_reason, 'tool_calls')
      t.notOk('type' in result)
      // OpenAI asks for one JSON answer (no frames to parse); the others collect their stream
      if (type === 'openai') t.equal(lastRequest().body['stream'], undefined, 'openai: not streamed')
    })

    t.test('the messages and tools as sent on the wire', async (t) => {
      fake.push({ text: 'Sunny.' })
      const done = doneOf(
        await run(client, { model: 'm-1', messages: CONVERSATION, tools: TOOLS, temperature: 1.5, max_tokens: 321 }),
      )
      t.equal(done.content, 'Sunny.', 'the fake accepted the request (it checks it like the real API)')
      const { body, headers, path } = lastRequest()
      t.equal(body['model'], 'm-1')
      switch (type) {
        case 'openai':
          t.equal(path, '/v1/chat/completions')
          t.equal(headers['authorization'], 'Bearer key-openai')
          t.same(body['stream_options'], { include_usage: true })
          t.equal(body['temperature'], 1.5)
          t.equal(body['max_tokens'], 321)
          t.same(body['messages'], CONVERSATION, 'the neutral messages are the OpenAI shape')
          t.same(
            body['tools'],
            TOOLS.map((x) => ({
              type: 'function',
              function: { name: x.name, description: x.description, parameters: x.parameters },
            })),
          )
          break
        case 'mistral': {
          t.equal(path, '/mistral/v1/chat/completions')
          t.equal(headers['authorization'], 'Bearer key-mistral')
          t.equal(body['stream_options'], undefined, 'Mistral gets no stream_options')
          const a = mistralToolCallId('call_abc123')
          const b = mistralToolCallId('toolu_01XYZ')
          t.match(a, /^[a-zA-Z0-9]{9}$/)
          t.not(a, b)
          t.same(body['messages'], [
            { role: 'system', content: 'You are terse.' },
            { role: 'user', content: 'Weather in Zürich and Bern?' },
            {
              role: 'assistant',
              content: '',
              tool_calls: [
                { id: a, type: 'function', function: { name: 'demo__lookup', arguments: '{"city":"Zürich"}' } },
                { id: b, type: 'function', function: { name: 'demo__lookup', arguments: '{"city":"Bern"}' } },
              ],
            },
            { role: 'tool', tool_call_id: a, content: '{"temp":21}', name: 'demo__lookup' },
            { role: 'tool', tool_call_id: b, content: '{"temp":19}', name: 'demo__lookup' },
            { role: 'user', content: 'And tomorrow?' },
          ])
          t.equal(body['max_tokens'], 321)
          break
        }
        case 'anthropic':
          t.equal(path, '/v1/messages')
          t.equal(headers['x-api-key'], 'key-anthropic')
          t.equal(headers['anthropic-version'], '2023-06-01')
          t.equal(headers['authorization'], undefined)
          t.equal(body['system'], 'You are terse.', 'the system prompt is top-level')
          t.equal(body['temperature'], 1, 'temperature clamped to 0–1')
          t.equal(body['max_tokens'], 321)
          t.equal(body['stream'], true)
          t.same(body['messages'], [
            { role: 'user', content: 'Weather in Zürich and Bern?' },
            {
              role: 'assistant',
              content: [
                { type: 'tool_use', id: 'call_abc123', name: 'demo__lookup', input: { city: 'Zürich' } },
                { type: 'tool_use', id: 'toolu_01XYZ', name: 'demo__lookup', input: { city: 'Bern' } },
              ],
            },
            {
              role: 'user',
              content: [
                { type: 'tool_result', tool_use_id: 'call_abc123', content: '{"temp":21}' },
                { type: 'tool_result', tool_use_id: 'toolu_01XYZ', content: '{"temp":19}' },
                { type: 'text', text: 'And tomorrow?' },
              ],
            },
          ])
          t.same(
            body['tools'],
            TOOLS.map((x) => ({ name: x.name, description: x.description, input_schema: x.parameters })),
          )
          break
        case 'ollama':
          t.equal(path, '/api/chat')
          t.equal(headers['authorization'], 'Bearer key-ollama')
          t.equal(body['stream'], true)
          t.same(body['options'], { temperature: 1.5, num_predict: 321 })
          t.same(body['messages'], [
            { role: 'system', content: 'You are terse.' },
            { role: 'user', content: 'Weather in Zürich and Bern?' },
            {
              role: 'assistant',
              content: '',
              tool_calls: [
                { function: { name: 'demo__lookup', arguments: { city: 'Zürich' } } },
                { function: { name: 'demo__lookup', arguments: { city: 'Bern' } } },
              ],
            },
            { role: 'tool', content: '{"temp":21}', tool_name: 'demo__lookup' },
            { role: 'tool', content: '{"temp":19}', tool_name: 'demo__lookup' },
            { role: 'user', content: 'And tomorrow?' },
          ])
          t.same(
            body['tools'],
            TOOLS.map((x) => ({
              type: 'function',
              function: { name: x.name, description: x.description, parameters: x.parameters },
            })),
          )
          break
      }
    })

    t.test('HTTP errors become llm.http_error with the provider status and retryability', async (t) => {
      fake.push({ error: { status: 429, headers: { 'retry-after': '2' } } })
      const limited = await failure(client, hello())
      t.equal(limited.err.code, 'llm.http_error')
      t.equal(limited.err.providerStatus, 429)
      t.equal(limited.err.retryable, true)
      t.equal(limited.err.retryAfterMs, 2000)
      t.equal(limited.err.status, 502, 'the platform answers 502')
      t.match(
        limited.err.message,
        /429: scripted error 429/,
        "the provider's message is extracted from its error shape",
      )
      t.same(limited.events, [])

      fake.push({ error: { status: 500, body: 'upstream exploded' } })
      const broken = await failure(client, hello())
      t.equal(broken.err.providerStatus, 500)
      t.equal(broken.err.retryable, true)
      t.match(broken.err.message, /upstream exploded/)

      fake.push({ error: { status: 401 } })
      const denied = await failure(client, hello())
      t.equal(denied.err.providerStatus, 401)
      t.equal(denied.err.retryable, false)
    })

    t.test('a slow first byte, a silent stream and a hung server end in llm.timeout', async (t) => {
      // The timeouts come from the provider's config here (they override the client options).
      const slow = clientFor(
        type,
        { first_byte_timeout_ms: 200, idle_timeout_ms: 200 },
        { firstByteTimeoutMs: 60_000, idleTimeoutMs: 60_000 },
      )
      fake.push({ text: 'late', delay_ms: 3000 })
      const late = await failure(slow, hello())
      t.equal(late.err.code, 'llm.timeout')
      t.equal(late.err.retryable, true)
      t.ok(late.ms < 2000, `gave up after ${String(late.ms)} ms`)

      fake.push({ text: ['one', 'two', 'three'], chunk_delay_ms: 3000 })
      const idle = await failure(slow, hello())
      t.equal(idle.err.code, 'llm.timeout', 'silence between chunks')
      t.ok(idle.ms < 2000, `gave up after ${String(idle.ms)} ms`)

      // Anthropic sends message_start, content_block_start and a ping before the first text.
      fake.push({ text: ['one', 'two'], stall_after: type === 'anthropic' ? 4 : 2 })
      const stalled = await failure(slow, hello())
      t.equal(stalled.err.code, 'llm.timeout', 'a stream that stops mid-way')
      t.ok(stalled.events.length >= 1, 'events before the stall were delivered')

      fake.push({ hang: true })
      const hung = await failure(
        createLlmClient(
          { provider_type: type, api_endpoint: fake.endpoint(type), api_key: 'k', default_model: null, config: {} },
          { firstByteTimeoutMs: 200 },
        ),
        hello(),
      )
      t.equal(hung.err.code, 'llm.timeout', 'client options apply without config overrides')
    })

    t.test('a slow consumer is not an idle provider', async (t) => {
      const tight = clientFor(type, {}, { idleTimeoutMs: 150 })
      fake.push({ text: ['a', 'b', 'c'] })
      const seen: string[] = []
      for await (const e of tight.stream(hello())) {
        if (e.type === 'text') seen.push(e.delta)
        await new Promise((r) => setTimeout(r, 300))
      }
      t.same(seen, ['a', 'b', 'c'])
    })

    t.test('the caller aborts through the signal', async (t) => {
      const controller = new AbortController()
      fake.push({ text: ['x', 'y', 'z', 'w'], chunk_delay_ms: 1000 })
      const events: ChatEvent[] = []
      let abortedAt = 0
      const err = await (async () => {
        try {
          for await (const e of client.stream(hello({ signal: controller.signal }))) {
            events.push(e)
            if (events.length === 1) {
              setTimeout(() => {
                abortedAt = Date.now()
                controller.abort()
              }, 50)
            }
          }
        } catch (e) {
          return e
        }
        return null
      })()
      t.ok(err instanceof LlmError && err.code === 'llm.aborted', 'llm.aborted mid-stream')
      t.equal((err as LlmError).retryable, false)
      t.ok(Date.now() - abortedAt < 700, 'without waiting for the next chunk')
      t.same(
        events.map((e) => e.type),
        ['text'],
      )

      const before = new AbortController()
      fake.push({ hang: true })
      setTimeout(() => before.abort(), 100)
      const hung = await failure(client, hello({ signal: before.signal }))
      t.equal(hung.err.code, 'llm.aborted', 'before the response head')

      const already = AbortSignal.abort()
      const count = fake.requests.length
      const pre = await failure(client, hello({ signal: already }))
      t.equal(pre.err.code, 'llm.aborted', 'an aborted signal sends nothing')
      t.equal(fake.requests.length, count)
    })

    t.test('malformed streams end in llm.bad_response; provider stream errors in llm.stream_error', async (t) => {
      const garbage =
        type === 'ollama'
          ? '{"message":{"role":"assistant","content":"ok"},"done":false}\nnot json at all\n'
          : 'data: {"choices": [\n\n'
      fake.push({ raw: garbage })
      const bad = await failure(client, hello())
      t.equal(bad.err.code, 'llm.bad_response')
      t.equal(bad.err.retryable, false)

      fake.push({ text: ['partial'], end_early: true })
      const early = await failure(client, hello())
      t.equal(early.err.code, 'llm.bad_response', 'a stream without its terminal frame')
      t.match(early.err.message, /ended before the reply was complete/)

      fake.push({ raw: '' })
      t.equal((await failure(client, hello())).err.code, 'llm.bad_response', 'an empty body')

      fake.push({ text: ['so far'], stream_error: { type: 'overloaded_error', message: 'Overloaded' } })
      const overloaded = await failure(client, hello())
      t.equal(overloaded.err.code, 'llm.stream_error')
      t.match(overloaded.err.message, /Overloaded/)
      if (type !== 'ollama') t.equal(overloaded.err.retryable, true, 'overloaded is worth a retry')
    })
  })
}

t.test('protocol details', async (t) => {
  t.beforeEach(() => fake.reset())

  t.test('anthropic: a malformed event sequence and thinking blocks', async (t) => {
    const client = clientFor('anthropic')
    fake.push({
      raw: 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{"}}\n\n',
    })
    t.equal((await failure(client, hello())).err.code, 'llm.bad_response', 'input_json_delta for no tool_use block')
    const ev = (o: unknown) => `event: x\ndata: ${JSON.stringify(o)}\n\n`
    fake.push({
      raw: [
        ev({
          type: 'message_start',
          message: { usage: { input_tokens: 5, cache_read_input_tokens: 3, output_tokens: 1 } },
        }),
        ev({ type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } }),
        ev({ type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'hmm' } }),
        ev({ type: 'content_block_stop', index: 0 }),
        ev({ type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } }),
        ev({ type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Hi' } }),
        ev({
          type: 'content_block_start',
          index: 2,
          content_block: { type: 'tool_use', id: 'toolu_1', name: 'demo__lookup', input: {} },
        }),
        ev({ type: 'content_block_stop', index: 2 }),
        ev({ type: 'some_future_event' }),
        ev({ type: 'message_delta', delta: { stop_reason: 'max_tokens' }, usage: { output_tokens: 7 } }),
        ev({ type: 'message_stop' }),
      ],
    })
    const done = doneOf(await run(client, hello()))
    t.equal(done.content, 'Hi', 'thinking is not text')
    t.same(
      done.tool_calls,
      [{ id: 'toolu_1', type: 'function', function: { name: 'demo__lookup', arguments: '{}' } }],
      'a call without input has {} arguments',
    )
    t.equal(done.finish_reason, 'length', 'max_tokens is length, also with a (possibly cut) tool call')
    t.same(
      done.usage,
      { prompt_tokens: 8, completion_tokens: 7, total_tokens: 15 },
      'cache reads count as prompt tokens',
    )
  })

  t.test('openai: no usage chunk, no [DONE] after a finish reason, length', async (t) => {
    const client = clientFor('openai')
    const chunk = (delta: unknown, finish: string | null) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
    fake.push({ raw: [chunk({ content: 'cut' }, null), chunk({}, 'length')] })
    const done = doneOf(await run(client, hello()))
    t.equal(done.finish_reason, 'length')
    t.same(
      done.usage,
      { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
      'zeros when the server reports no usage',
    )

    fake.push({ raw: [chunk({ content: 'half' }, null), 'data: [DONE]\n\n'] })
    const cut = await failure(client, hello())
    t.equal(cut.err.code, 'llm.bad_response', '[DONE] before a finish reason is not a complete reply')
    t.same(cut.events, [{ type: 'text', delta: 'half' }], 'what came before it was streamed')

    fake.push({ raw: [chunk({ content: 'whole' }, 'stop'), 'data: [DONE]\n\n', 'data: not json after the end\n\n'] })
    t.equal(doneOf(await run(client, hello())).content, 'whole', 'nothing after [DONE] is read')
  })

  t.test("openai and mistral: a gateway's reported cost (usage.cost) is kept, never made up", async (t) => {
    for (const type of ['openai', 'mistral'] as const) {
      const client = clientFor(type)
      fake.push({ text: 'priced', usage: { prompt_tokens: 3, completion_tokens: 2, cost: 0.0042 } })
      t.equal(doneOf(await run(client, hello())).cost, 0.0042, `${type}: streamed`)
      fake.push({ text: 'priced', usage: { prompt_tokens: 3, completion_tokens: 2, cost: 0.5 } })
      t.equal((await client.complete(hello())).cost, 0.5, `${type}: complete()`)
      fake.push({ text: 'unpriced', usage: { prompt_tokens: 3, completion_tokens: 2 } })
      t.equal(doneOf(await run(client, hello())).cost, undefined, `${type}: none reported, none given`)
    }
    const client = clientFor('openai')
    const chunk = (usage: unknown) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'x' }, finish_reason: 'stop' }], usage })}\n\n`
    fake.push({ raw: [chunk({ prompt_tokens: 1, completion_tokens: 1, cost: -1 }), 'data: [DONE]\n\n'] })
    t.equal(doneOf(await run(client, hello())).cost, undefined, 'a negative cost is no cost')
    fake.push({ raw: [chunk({ prompt_tokens: 1, completion_tokens: 1, cost: '0.1' }), 'data: [DONE]\n\n'] })
    t.equal(doneOf(await run(client, hello())).cost, undefined, 'nor is a string')
  })

  t.test('openai: config max_tokens, max_completion_tokens and organization', async (t) => {
    const client = clientFor('openai', {
      max_tokens: 77,
      max_tokens_param: 'max_completion_tokens',
      organization_id: 'org-1',
    })
    fake.push({ text: 'ok' })
    await client.complete(hello())
    const { body, headers } = lastRequest()
    t.equal(body['max_completion_tokens'], 77)
    t.equal(body['max_tokens'], undefined)
    t.equal(headers['openai-organization'], 'org-1')
  })

  t.test("openai complete(): its headers, and its failures mapped like a stream's", async (t) => {
    // complete() is one JSON POST (jsonChatComplete): the stream's headers, and the same errors
    const client = clientFor('openai')
    const completeFailure = async (req: ChatRequest): Promise<LlmError> => {
      try {
        await client.complete(req)
      } catch (err) {
        if (err instanceof LlmError) return err
        throw err
      }
      throw new Error('complete() did not fail')
    }
    fake.push({ text: 'ok', usage: { prompt_tokens: 3, completion_tokens: 1 } })
    const ok = await client.complete(hello())
    t.same([ok.content, ok.finish_reason, ok.usage.prompt_tokens, ok.usage.completion_tokens], ['ok', 'stop', 3, 1])
    const { headers, path } = lastRequest()
    t.equal(path, '/v1/chat/completions')
    t.equal(headers['authorization'], 'Bearer key-openai')
    t.equal(headers['accept'], 'application/json')
    t.equal(headers['content-type'], 'application/json')
    t.equal(headers['user-agent'], 'agent-platform-llm/1')

    fake.push({ error: { status: 429, headers: { 'retry-after': '2' } } })
    const limited = await completeFailure(hello())
    t.same(
      [limited.code, limited.providerStatus, limited.retryable, limited.retryAfterMs],
      ['llm.http_error', 429, true, 2000],
    )
    t.match(limited.message, /429: scripted error 429/)

    fake.push({ raw: 'this is not json' })
    t.equal((await completeFailure(hello())).code, 'llm.bad_response', 'a 200 answer that is not JSON')
    fake.push({ raw: '[1, 2]' })
    t.equal((await completeFailure(hello())).code, 'llm.bad_response', 'JSON that is not a chat completion')

    const slow = clientFor('openai', { first_byte_timeout_ms: 200 })
    fake.push({ text: 'late', delay_ms: 3000 })
    const started = Date.now()
    const late = await slow.complete(hello()).then(
      () => null,
      (err: unknown) => err,
    )
    t.equal((late as LlmError | null)?.code, 'llm.timeout')
    t.ok(Date.now() - started < 2000, 'gave up at the first-byte timeout')

    const ac = new AbortController()
    fake.push({ text: 'never read', delay_ms: 3000 })
    setTimeout(() => ac.abort(), 100)
    t.equal((await completeFailure(hello({ signal: ac.signal }))).code, 'llm.aborted')
    fake.push({ text: 'next' })
    t.equal((await client.complete(hello())).content, 'next', 'the next call works')
  })

  t.test('anthropic: max_tokens defaults, several system messages, empty text left out', async (t) => {
    const client = clientFor('anthropic')
    fake.push({ text: 'ok' })
    await client.complete({
      model: 'claude',
      messages: [
        { role: 'system', content: 'one' },
        { role: 'system', content: 'two' },
        { role: 'user', content: 'q' },
        {
          role: 'assistant',
          content: '',
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: 'not json' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: null },
      ],
    })
    const { body } = lastRequest()
    t.equal(body['max_tokens'], 4096)
    t.equal(body['system'], 'one\n\ntwo')
    t.same(body['messages'], [
      { role: 'user', content: 'q' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'c1', name: 'f', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c1', content: '' }] },
    ])
  })

  t.test(
    'openai and mistral: settings come from the provider only, never from OPENAI_* variables (as the official SDK would read them)',
    async (t) => {
      const saved = {
        key: process.env['OPENAI_API_KEY'],
        base: process.env['OPENAI_BASE_URL'],
        org: process.env['OPENAI_ORG_ID'],
      }
      process.env['OPENAI_API_KEY'] = 'env-key'
      process.env['OPENAI_BASE_URL'] = 'http://127.0.0.1:1/v1'
      process.env['OPENAI_ORG_ID'] = 'env-org'
      t.teardown(() => {
        for (const [name, value] of [
          ['OPENAI_API_KEY', saved.key],
          ['OPENAI_BASE_URL', saved.base],
          ['OPENAI_ORG_ID', saved.org],
        ] as const) {
          if (value === undefined) delete process.env[name]
          else process.env[name] = value
        }
      })
      for (const type of ['openai', 'mistral'] as const) {
        fake.push({ text: 'local' })
        const keyless = createLlmClient({
          provider_type: type,
          api_endpoint: fake.endpoint(type),
          api_key: null,
          default_model: null,
          config: {},
        })
        t.equal(
          (await keyless.complete(hello())).content,
          'local',
          `${type}: the provider's endpoint, not OPENAI_BASE_URL`,
        )
        t.equal(
          lastRequest().headers['authorization'],
          undefined,
          `${type}: no key, no Authorization header (not OPENAI_API_KEY)`,
        )
        t.equal(lastRequest().headers['openai-organization'], undefined, `${type}: no OPENAI_ORG_ID`)
      }
    },
  )

  t.test('breaking out of the loop ends the exchange', async (t) => {
    const client = clientFor('openai')
    fake.push({ text: ['a', 'b', 'c', 'd', 'e'], chunk_delay_ms: 1000 })
    const started = Date.now()
    for await (const e of client.stream(hello())) if (e.type === 'text') break
    t.ok(Date.now() - started < 1700, 'the loop ended without reading the rest')
    fake.push({ text: 'next' })
    t.equal((await client.complete(hello())).content, 'next', 'the next call works')
  })

  t.test('endpoints the guard refuses even for providers', async (t) => {
    const metadata = createLlmClient({
      provider_type: 'openai',
      api_endpoint: 'http://169.254.169.254/v1',
      api_key: 'k',
      default_model: null,
      config: {},
    })
    const err = await failure(metadata, hello())
    t.equal(err.err.code, 'llm.endpoint_refused', 'link-local (cloud metadata) stays refused')
    const ftp = createLlmClient({
      provider_type: 'openai',
      api_endpoint: 'ftp://example.com/v1',
      api_key: 'k',
      default_model: null,
      config: {},
    })
    t.equal((await failure(ftp, hello())).err.code, 'llm.endpoint_refused', 'non-http schemes')
    const closed = createLlmClient({
      provider_type: 'ollama',
      api_endpoint: 'http://127.0.0.1:1',
      api_key: null,
      default_model: null,
      config: {},
    })
    const refused = await failure(closed, hello())
    t.equal(refused.err.code, 'llm.connection_failed')
    t.equal(refused.err.retryable, true)
    const lost = createLlmClient({
      provider_type: 'openai',
      api_endpoint: 'https://llm.nowhere.invalid/v1',
      api_key: 'k',
      default_model: null,
      config: {},
    })
    const unresolved = await failure(lost, hello())
    t.equal(
      unresolved.err.code,
      'llm.connection_failed',
      'a host that does not resolve (upstream.dns_failed) is a connection failure',
    )
    t.match(unresolved.err.message, /llm\.nowhere\.invalid/, 'naming the host')
    t.throws(
      () =>
        createLlmClient({
          provider_type: 'ollama',
          api_endpoint: null,
          api_key: null,
          default_model: null,
          config: {},
        }),
      { code: 'llm.endpoint_refused' },
    )
  })

  t.test('the fake answers non-streaming requests too', async (t) => {
    for (const type of TYPES) {
      fake.push({ text: 'plain', tool_calls: [{ name: 'f', arguments: { a: 1 } }] })
      const res = await fetch(
        `${fake.endpoint(type)}${type === 'anthropic' ? '/v1/messages' : type === 'ollama' ? '/api/chat' : '/chat/completions'}`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
          body: JSON.stringify({
            model: 'm',
            max_tokens: 5,
            stream: false,
            messages: [{ role: 'user', content: 'hi' }],
          }),
        },
      )
      t.equal(res.status, 200, type)
      const body = (await res.json()) as Record<string, unknown>
      t.ok(JSON.stringify(body).includes('plain'), `${type}: the text is in the body`)
    }
  })
})

t.test('allowPrivate in the outbound guard', async (t) => {
  for (const a of [
    '127.0.0.1',
    '10.1.2.3',
    '192.168.0.9',
    '172.20.0.1',
    '100.64.1.1',
    '::1',
    'fd00::1',
    '::ffff:127.0.0.1',
  ]) {
    t.not(blockedReason(a), null, `${a} refused by default`)
    t.equal(blockedReason(a, { allowPrivate: true }), null, `${a} allowed with allowPrivate`)
  }
  for (const a of ['169.254.169.254', 'fe80::1', '0.0.0.0', '224.0.0.1', '::ffff:169.254.169.254', '198.18.0.1']) {
    t.not(blockedReason(a, { allowPrivate: true }), null, `${a} refused even with allowPrivate`)
  }
  await t.rejects(
    guardedStream(fake.url, { headTimeoutMs: 1000, idleTimeoutMs: 1000, httpsOnly: false }),
    { code: 'outbound.private_address' },
    'guardedStream refuses loopback without allowPrivate',
  )
  await t.rejects(
    guardedStream(`${fake.url}/v1/chat/completions`, { headTimeoutMs: 1000, idleTimeoutMs: 1000, allowPrivate: true }),
    { code: 'outbound.not_https' },
    'and plain http unless httpsOnly is false',
  )
  const res = await guardedStream(`${fake.url}/nothing`, {
    headTimeoutMs: 1000,
    idleTimeoutMs: 1000,
    httpsOnly: false,
    allowPrivate: true,
  })
  t.equal(res.status, 404)
  let size = 0
  for await (const chunk of res.body) size += chunk.length
  t.ok(size > 0, 'the body streams')
  fake.push({ text: ['a', 'b'], chunk_delay_ms: 200 })
  const controller = new AbortController()
  const idle = await guardedStream(`${fake.url}/v1/chat/completions`, {
    method: 'POST',
    body: JSON.stringify({ model: 'm', messages: [], stream: true }),
    headTimeoutMs: 1000,
    idleTimeoutMs: 1000,
    httpsOnly: false,
    allowPrivate: true,
    signal: controller.signal,
  })
  controller.abort()
  await new Promise((r) => setTimeout(r, 50))
  await t.rejects(
    (async () => {
      for await (const _ of idle.body) void _
    })(),
    { code: 'outbound.aborted' },
    'an abort before the first read is reported by the read (and does not crash the process)',
  )
  const capped = await guardedStream(`${fake.url}/nothing`, {
    headTimeoutMs: 1000,
    idleTimeoutMs: 1000,
    httpsOnly: false,
    allowPrivate: true,
    maxResponseBytes: 4,
  })
  await t.rejects(
    (async () => {
      for await (const _ of capped.body) void _
    })(),
    { code: 'outbound.response_too_large' },
  )
})

t.test(
  'response_format on each wire: OpenAI and Mistral as given, Ollama as format, Anthropic as a system instruction',
  async (t) => {
    const schema = { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] }
    const rf = { type: 'json_schema', json_schema: { name: 'pair', schema } }
    for (const type of TYPES) {
      fake.push({ text: '{"a": 1}' })
      const r = await clientFor(type).complete({
        model: 'm',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'a?' },
        ],
        response_format: rf,
      })
      t.equal(r.content, '{"a": 1}', `${type}: answered`)
      const body = lastRequest().body
      if (type === 'openai' || type === 'mistral')
        t.same(body['response_format'], rf, `${type}: response_format as given`)
      else t.notOk('response_format' in body, `${type}: no response_format on its wire`)
      if (type === 'ollama') t.same(body['format'], schema, 'ollama: the schema as format')
      if (type === 'anthropic')
        t.match(
          body['system'],
          /^Be brief\.\n\nAnswer with one JSON value only .*\{"type":"object"/s,
          'anthropic: an instruction after the system prompt',
        )
    }
    fake.push({ text: '{}' })
    await clientFor('ollama').complete({
      model: 'm',
      messages: [{ role: 'user', content: 'json' }],
      response_format: { type: 'json_object' },
    })
    t.equal(lastRequest().body['format'], 'json', 'ollama: json_object is format "json"')
  },
)

t.test('resolveProvider: the resolution order', async (t) => {
  const p = (id: string, extra: Partial<ProviderEntry> = {}): ProviderEntry => ({
    id,
    name: `p-${id}`,
    provider_type: 'openai',
    api_endpoint: null,
    default_model: `model-of-${id}`,
    config: {},
    is_default: false,
    is_active: true,
    ...extra,
  })
  const providers = [
    p('a'),
    p('b', { is_default: true }),
    p('c', { default_model: null }),
    p('d', { is_active: false }),
  ]

  t.test('(1)+(2) the agent provider and model', async (t) => {
    const r = resolveProvider({ llm_provider_id: 'a', model: 'gpt-x' }, providers)
    t.equal(r.provider.id, 'a')
    t.equal(r.model, 'gpt-x')
  })
  t.test('(3) the provider default model when the agent names none', async (t) => {
    t.same(resolveProvider({ llm_provider_id: 'a', model: null }, providers).model, 'model-of-a')
  })
  t.test('(4) the default provider when the agent names none, with the agent model or its default', async (t) => {
    const withModel = resolveProvider({ llm_provider_id: null, model: 'gpt-y' }, providers)
    t.equal(withModel.provider.id, 'b')
    t.equal(withModel.model, 'gpt-y')
    t.equal(resolveProvider({ llm_provider_id: null, model: null }, providers).model, 'model-of-b')
  })
  t.test('errors', async (t) => {
    t.throws(() => resolveProvider({ llm_provider_id: null, model: 'x' }, [p('a')]), {
      code: 'llm.no_provider',
      status: 503,
    })
    t.throws(
      () => resolveProvider({ llm_provider_id: null, model: 'x' }, [p('a', { is_default: true, is_active: false })]),
      { code: 'llm.no_provider' },
      'a disabled default is no default',
    )
    t.throws(() => resolveProvider({ llm_provider_id: 'c', model: null }, providers), { code: 'llm.no_model' })
    t.equal(resolveProvider({ llm_provider_id: 'c', model: 'given' }, providers).model, 'given')
    t.notOk(
      'fallback' in resolveProvider({ llm_provider_id: 'a', model: null }, providers),
      'no fallback when the agent provider is usable',
    )
  })
  t.test('a deleted or disabled agent provider: the default provider stands in, and says so', async (t) => {
    const gone = resolveProvider({ llm_provider_id: 'zz', model: null }, providers)
    t.equal(gone.provider.id, 'b', 'a dangling id falls back to the default')
    t.equal(gone.model, 'model-of-b', "the default provider's default_model")
    t.match(gone.fallback, /zz does not exist: using the default provider p-b/)
    const disabled = resolveProvider({ llm_provider_id: 'd', model: 'x' }, providers)
    t.equal(disabled.provider.id, 'b', 'so does a disabled provider')
    t.equal(disabled.model, 'x', "the agent's model with the resolved provider")
    t.match(disabled.fallback, /p-d is disabled/)
  })
  t.test('no usable default either: llm.provider_not_found', async (t) => {
    const noDefault = [p('a'), p('d', { is_active: false }), p('e', { is_default: true, is_active: false })]
    t.throws(() => resolveProvider({ llm_provider_id: 'zz', model: 'x' }, noDefault), {
      code: 'llm.provider_not_found',
      message: /does not exist and no default provider/,
    })
    t.throws(() => resolveProvider({ llm_provider_id: 'd', model: 'x' }, noDefault), {
      code: 'llm.provider_not_found',
      message: /is disabled and no default provider/,
    })
  })
})

t.test('resolveAgentLlm: providers from the resources table, api_key decrypted', async (t) => {
  const env = await startTestPlatform(t)
  const { db, resources } = env.platform
  if (db === undefined || resources === undefined) throw new Error('the test platform has no database role')
  const create = async (body: Record<string, unknown>) => {
    const res = await env.request('POST', '/api/v1/llm-providers', { body })
    t.equal(res.status, 201, `created ${String(body['name'])}: ${res.text}`)
    return (res.body as { id: string }).id
  }
  const deps = { db, resources }
  await t.rejects(resolveAgentLlm(deps, { llm_provider_id: null, model: null }), { code: 'llm.no_provider' })
  await t.rejects(
    resolveAgentLlm(deps, { llm_provider_id: '00000000-0000-4000-8000-000000000000', model: null }),
    { code: 'llm.provider_not_found' },
    'a dangling id and no default',
  )
  const anthropicId = await create({
    name: 'claude',
    provider_type: 'anthropic',
    api_endpoint: fake.endpoint('anthropic'),
    api_key: 'sk-ant-secret',
    default_model: 'claude-x',
  })
  const ollamaId = await create({
    name: 'local',
    provider_type: 'ollama',
    api_endpoint: fake.endpoint('ollama'),
    default_model: 'llama-y',
    is_default: true,
  })

  fake.reset()
  fake.push({ text: 'from the default' })
  const byDefault = await resolveAgentLlm(deps, { llm_provider_id: null, model: null })
  t.equal(byDefault.provider.id, ollamaId)
  t.equal(byDefault.model, 'llama-y')
  t.equal(
    (await byDefault.client.complete({ model: byDefault.model, messages: [{ role: 'user', content: 'hi' }] })).content,
    'from the default',
  )
  t.equal(lastRequest().headers['authorization'], undefined, 'no key, no header')

  fake.push({ text: 'from claude' })
  const pinned = await resolveAgentLlm(deps, { llm_provider_id: anthropicId, model: 'claude-z' })
  t.equal(pinned.provider.name, 'claude')
  t.equal(pinned.model, 'claude-z')
  t.equal(
    (await pinned.client.complete({ model: pinned.model, messages: [{ role: 'user', content: 'hi' }] })).content,
    'from claude',
  )
  t.equal(lastRequest().headers['x-api-key'], 'sk-ant-secret', 'the decrypted key went to the provider')
  t.equal(lastRequest().body['model'], 'claude-z')

  const dangling = await resolveAgentLlm(deps, { llm_provider_id: '00000000-0000-4000-8000-000000000000', model: null })
  t.equal(dangling.provider.id, ollamaId, 'a provider id that points nowhere falls back to the default provider')
  t.match(dangling.fallback, /does not exist: using the default provider local/)
  const patched = await env.request('PATCH', `/api/v1/llm-providers/${anthropicId}`, { body: { is_default: true } })
  t.equal(patched.status, 200, patched.text)
  t.equal(
    (await resolveAgentLlm(deps, { llm_provider_id: null, model: null })).provider.id,
    anthropicId,
    'the default moved',
  )
})
