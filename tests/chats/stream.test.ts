import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { eventually } from '../helpers/eventually.ts'
import { startFakeLlm, type FakeLlm, type FakeRequest } from '../helpers/fake-llm.ts'
import { parseSse, type SseEvent } from '../helpers/sse-events.ts'

/*
 * A chat turn streamed over SSE: every event has an id; the stream ends with `done`; a client
 * that drops the connection and resumes with Last-Event-ID gets exactly the remaining events; a
 * failing turn ends with an `error` event instead of leaving the client hanging. A client that
 * disconnects and does not come back within SSE_RECONNECT_WINDOW_SECONDS cancels the turn and its
 * provider call; one that resumes within the window gets the whole answer.
 */
const RECONNECT_WINDOW_SECONDS = 2
let env: TestPlatform
let llm: FakeLlm

async function stream(
  path: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string>; stopAfter?: number } = {},
): Promise<{ status: number; events: SseEvent[] }> {
  const ac = new AbortController()
  const res = await fetch(`${env.base}${path}`, {
    method: init.method ?? 'POST',
    headers: { authorization: `Bearer ${env.adminToken}`, 'content-type': 'application/json', ...init.headers },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    signal: ac.signal,
  })
  if (res.status !== 200 || res.body === null) return { status: res.status, events: [] }
  let text = ''
  const decoder = new TextDecoder()
  // The first `stopAfter` events, kept before the abort: a `return` from inside the loop after the
  // abort had the stream's cleanup throw the AbortError, which the catch swallowed, and the answer
  // became every event of the text (8 where a chunk carried more than the 5 asked for).
  let stopped: SseEvent[] | undefined
  try {
    for await (const chunk of res.body) {
      text += decoder.decode(chunk as Uint8Array, { stream: true })
      const events = parseSse(text.slice(0, text.lastIndexOf('\n\n') + 2))
      if (init.stopAfter !== undefined && events.length >= init.stopAfter) {
        stopped = events.slice(0, init.stopAfter)
        ac.abort()
        break
      }
    }
  } catch (err) {
    if (!ac.signal.aborted) throw err
  }
  return { status: res.status, events: stopped ?? parseSse(text) }
}

t.before(async () => {
  llm = await startFakeLlm()
  t.teardown(() => llm.close())
  env = await startTestPlatform(t, { SSE_RECONNECT_WINDOW_SECONDS: String(RECONNECT_WINDOW_SECONDS) })
  await env.request('POST', '/api/v1/llm-providers', {
    body: {
      name: 'fake',
      provider_type: 'openai',
      api_endpoint: llm.endpoint('openai'),
      api_key: 'k',
      default_model: 'm',
      is_default: true,
    },
  })
  await env.request('POST', '/api/v1/functions', {
    body: {
      namespace: 'tools',
      name: 'echo',
      code: 'def handler(input, context):\n    return {"echo": input.get("text")}\n',
    },
  })
  await env.request('POST', '/api/v1/agents', {
    body: { namespace: 'demo', name: 'streamer', system_prompt: 'Stream.', enabled_functions: ['tools/echo'] },
  })
})

t.test('a streamed turn: deltas, tool events, done; every event has an increasing id', async (t) => {
  const chat = (await env.request('POST', '/agents/demo/streamer/chats', { body: {} })).body as { id: string }
  llm.push(
    { tool_calls: [{ id: 'e1', name: 'tools__echo', arguments: { text: 'ping' } }] },
    { text: ['Got', ' it', ', ', 'pong', '.'], chunk_delay_ms: 5 },
  )
  const { status, events } = await stream(`/chats/${chat.id}/messages/stream`, { body: { content: 'go' } })
  t.equal(status, 200)
  const names = events.map((e) => e.event)
  t.same(
    names.filter((n) => n !== 'message'),
    ['tool_start', 'tool_end', 'done'],
  )
  t.match(events.find((e) => e.event === 'tool_end')?.data, { tool_call_id: 'e1', result: { echo: 'ping' } })
  t.equal(
    events
      .filter((e) => e.event === 'message')
      .map((e) => (e.data as { content: string | null }).content ?? '')
      .join(''),
    'Got it, pong.',
  )
  t.match(events.at(-1)?.data, { status: 'completed', usage: { total_tokens: Number } })
  const ids = events.map((e) => e.id)
  t.ok(
    ids.every((id, i) => Number.isInteger(id) && (i === 0 || id > (ids[i - 1] as number))),
    'ids increase',
  )
})

t.test('a dropped client resumes with Last-Event-ID: no gap, no duplicate', async (t) => {
  const chat = (await env.request('POST', '/agents/demo/streamer/chats', { body: {} })).body as { id: string }
  llm.push({ text: Array.from({ length: 30 }, (_, i) => `w${String(i)} `), chunk_delay_ms: 20 })
  const first = await stream(`/chats/${chat.id}/messages/stream`, { body: { content: 'long answer' }, stopAfter: 5 })
  t.equal(first.events.length, 5)
  const channel = ((await env.request('GET', `/chats/${chat.id}`)).body as { active_channel_id: string })
    .active_channel_id
  const last = first.events.at(-1)?.id as number
  const rest = await stream(`/chats/${chat.id}/stream/${channel}`, {
    method: 'GET',
    headers: { 'last-event-id': String(last) },
  })
  t.equal(rest.status, 200)
  t.ok(
    rest.events.every((e) => e.id > last),
    'nothing before the resume point',
  )
  const all = [...first.events, ...rest.events]
  const text = all
    .filter((e) => e.event === 'message')
    .map((e) => (e.data as { content: string | null }).content ?? '')
    .join('')
  t.equal(text, Array.from({ length: 30 }, (_, i) => `w${String(i)} `).join(''), 'every delta exactly once, in order')
  t.equal(all.at(-1)?.event, 'done')
  const again = await stream(`/chats/${chat.id}/stream/${channel}?last_id=0`, { method: 'GET' })
  t.equal(again.events.length, all.length, 'a resume from 0 replays the whole turn')
  const b = await env.createUser('stream-b@test.local')
  const foreign = await fetch(`${env.base}/chats/${chat.id}/stream/${channel}`, {
    headers: { authorization: `Bearer ${b.token}` },
  })
  t.equal(foreign.status, 404, 'another user cannot attach to the stream')
})

t.test('a failing provider ends the stream with an error event', async (t) => {
  const chat = (await env.request('POST', '/agents/demo/streamer/chats', { body: {} })).body as { id: string }
  llm.push({ error: { status: 500, body: { error: { message: 'boom' } } } })
  const { events } = await stream(`/chats/${chat.id}/messages/stream`, { body: { content: 'fail please' } })
  t.equal(events.at(-1)?.event, 'error')
  t.match(events.at(-1)?.data, { code: /^llm\./ })
})

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const deltas = (events: SseEvent[]) =>
  events
    .filter((e) => e.event === 'message')
    .map((e) => (e.data as { content: string | null }).content ?? '')
    .join('')

t.test(
  'a client that disconnects and does not come back cancels the provider call and the turn; the chat takes the next message',
  async (t) => {
    const chat = (await env.request('POST', '/agents/demo/streamer/chats', { body: {} })).body as { id: string }
    // 60 chunks 250 ms apart: 15 s of answer, far longer than the reconnect window.
    llm.push({ text: Array.from({ length: 60 }, (_, i) => `s${String(i)} `), chunk_delay_ms: 250 })
    const before = llm.requests.length
    const first = await stream(`/chats/${chat.id}/messages/stream`, {
      body: { content: 'a long answer nobody reads' },
      stopAfter: 2,
    })
    t.equal(first.events.length, 2, 'the client read two events, then went away')
    const request = llm.requests[before] as FakeRequest
    t.ok(request.stream, 'the provider call was streaming')
    await eventually(async () => (request.closed_early === true ? true : undefined), 'the provider call to be aborted')
    t.equal(request.closed_early, true, 'the fake LLM saw the connection close before the reply was complete')

    const channel = ((await env.request('GET', `/chats/${chat.id}`)).body as { active_channel_id: string })
      .active_channel_id
    const replay = await stream(`/chats/${chat.id}/stream/${channel}?last_id=0`, { method: 'GET' })
    t.equal(replay.events.at(-1)?.event, 'error', 'the abandoned turn ended with an error event')
    t.match(replay.events.at(-1)?.data, { code: 'chat.stream_abandoned' })
    t.notOk(
      replay.events.some((e) => e.event === 'done'),
      'it did not complete',
    )

    llm.push({ text: ['next ', 'answer'] })
    const next = await env.request('POST', `/chats/${chat.id}/messages`, { body: { content: 'still there?' } })
    t.equal(next.status, 200, 'the chat is free for the next message')
    t.match(next.body, { role: 'assistant', content: 'next answer', status: 'completed' })
  },
)

t.test('a client that reconnects within the window gets the full answer', async (t) => {
  const chat = (await env.request('POST', '/agents/demo/streamer/chats', { body: {} })).body as { id: string }
  // 24 chunks 200 ms apart: the answer outlasts the window, so the listener check runs while the client is back.
  const words = Array.from({ length: 24 }, (_, i) => `r${String(i)} `)
  llm.push({ text: words, chunk_delay_ms: 200 })
  const before = llm.requests.length
  const first = await stream(`/chats/${chat.id}/messages/stream`, {
    body: { content: 'a long answer, read in two goes' },
    stopAfter: 2,
  })
  const channel = ((await env.request('GET', `/chats/${chat.id}`)).body as { active_channel_id: string })
    .active_channel_id
  await sleep(300) // the client is away for a moment (well within the window)
  const rest = await stream(`/chats/${chat.id}/stream/${channel}`, {
    method: 'GET',
    headers: { 'last-event-id': String(first.events.at(-1)?.id) },
  })
  const all = [...first.events, ...rest.events]
  t.equal(deltas(all), words.join(''), 'every delta, in order')
  t.equal(all.at(-1)?.event, 'done')
  t.match(all.at(-1)?.data, { status: 'completed' })
  t.notOk((llm.requests[before] as FakeRequest).closed_early, 'the provider call ran to its end')
})
