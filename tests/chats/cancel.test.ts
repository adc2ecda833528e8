import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { eventually } from '../helpers/eventually.ts'
import { startFakeLlm, type FakeLlm, type FakeRequest } from '../helpers/fake-llm.ts'
import { parseSse, type SseEvent } from '../helpers/sse-events.ts'

/*
 * A chat's owner stops the running turn (POST /chats/{id}/cancel): the provider call is aborted,
 * the turn's stream ends with an `error` event (chat.turn_cancelled), its job is `cancelled`, the
 * user's message stays and the half-streamed reply does not, and the chat takes the next message.
 * A turn still waiting in the queue for a worker slot is cancelled too (no worker ends it: the
 * cancel ends its stream and tells its chat, which starts the next queued message; a platform
 * without agent workers keeps every turn waiting). Nothing running: `idle`. Another user: 404.
 */
let env: TestPlatform
let llm: FakeLlm

/** A streamed send read to its end; `events` fills as they arrive, `accepted` once the answer's head is in (the message was queued). */
function send(
  chatId: string,
  content: string,
  on = env,
): { events: SseEvent[]; accepted: Promise<unknown>; ended: Promise<number> } {
  const events: SseEvent[] = []
  let accept: (v: unknown) => void = () => undefined
  const accepted = new Promise((resolve) => (accept = resolve))
  const ended = (async () => {
    const res = await fetch(`${on.base}/chats/${chatId}/messages/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${on.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ content }),
    })
    accept(undefined)
    if (res.status !== 200 || res.body === null) return res.status
    let text = ''
    const decoder = new TextDecoder()
    for await (const chunk of res.body) {
      text += decoder.decode(chunk as Uint8Array, { stream: true })
      events.splice(0, events.length, ...parseSse(text.slice(0, text.lastIndexOf('\n\n') + 2)))
    }
    events.splice(0, events.length, ...parseSse(text))
    return res.status
  })()
  return { events, accepted, ended }
}

const newChat = async () =>
  ((await env.request('POST', '/agents/demo/slow/chats', { body: {} })).body as { id: string }).id
const long = (tag: string) => ({
  text: Array.from({ length: 80 }, (_, i) => `${tag}${String(i)} `),
  chunk_delay_ms: 250,
})

t.before(async () => {
  llm = await startFakeLlm()
  t.teardown(() => llm.close())
  env = await startTestPlatform(t)
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
  await env.request('POST', '/api/v1/agents', { body: { namespace: 'demo', name: 'slow', system_prompt: 'Talk.' } })
})

t.test('a streamed turn stopped mid-answer; the chat answers the next message', async (t) => {
  const chat = await newChat()
  t.same((await env.request('POST', `/chats/${chat}/cancel`)).body, { status: 'idle' }, 'nothing runs yet: idle')

  llm.push(long('a'))
  const before = llm.requests.length
  const turn = send(chat, 'a long answer, please')
  await eventually(
    async () => (turn.events.filter((e) => e.event === 'message').length >= 2 ? true : undefined),
    'two deltas of the answer',
  )
  const b = await env.createUser('cancel-b@test.local')
  t.equal((await env.request('POST', `/chats/${chat}/cancel`, { token: b.token })).status, 404, 'not for another user')

  const res = await env.request('POST', `/chats/${chat}/cancel`)
  t.equal(res.status, 200)
  const answer = res.body as { status: string; job_id: string }
  t.match(answer, { status: 'cancelled', job_id: /^[0-9a-f-]{36}$/ })

  t.equal(await turn.ended, 200)
  t.equal(turn.events.at(-1)?.event, 'error', 'the stream ends with the turn’s end event')
  t.match(turn.events.at(-1)?.data, { code: 'chat.turn_cancelled' })
  t.notOk(
    turn.events.some((e) => e.event === 'done'),
    'it did not complete',
  )
  const request = llm.requests[before] as FakeRequest
  await eventually(async () => (request.closed_early === true ? true : undefined), 'the provider call to be aborted')
  t.equal(request.closed_early, true, 'the fake LLM saw its request aborted')
  t.match((await env.request('GET', `/jobs/${answer.job_id}`)).body, { status: 'cancelled' })

  const stored = (await env.request('GET', `/chats/${chat}`)).body as { messages: { role: string; content: string }[] }
  t.same(
    stored.messages.map((m) => [m.role, m.content]),
    [['user', 'a long answer, please']],
    'the user message is kept, the half-streamed reply is not (as for an abandoned stream)',
  )

  llm.push({ text: ['next ', 'answer'] })
  const next = await env.request('POST', `/chats/${chat}/messages`, { body: { content: 'still there?' } })
  t.equal(next.status, 200, 'the chat takes the next message')
  t.match(next.body, { role: 'assistant', content: 'next answer', status: 'completed' })
  t.same((await env.request('POST', `/chats/${chat}/cancel`)).body, { status: 'idle' }, 'nothing runs any more')
})

t.test('a turn waiting in the queue is cancelled: its stream ends, the chat takes its next message', async (t) => {
  // no agent worker at all: every turn waits in JOBS, as when every slot is taken
  const queued = await startTestPlatform(t, { QUEUE_AGENT_REPLICAS: '0' })
  await queued.request('POST', '/api/v1/agents', { body: { namespace: 'demo', name: 'slow', system_prompt: 'Talk.' } })
  const chat = ((await queued.request('POST', '/agents/demo/slow/chats', { body: {} })).body as { id: string }).id
  const first = send(chat, 'first', queued)
  await first.accepted
  const second = send(chat, 'second, queued behind the first', queued)
  const cancel = async () => {
    const r = await queued.request('POST', `/chats/${chat}/cancel`)
    return r.body as { status: string; job_id?: string }
  }
  // the chat actor's running turn as soon as it handled the send (read from its state)
  const one = await eventually(async () => {
    const a = await cancel()
    return a.status === 'cancelled' ? a : undefined
  }, 'the first turn to be cancelled')
  t.equal(await first.ended, 200)
  t.equal(first.events.at(-1)?.event, 'error', 'no worker ran it: the cancel ended its stream')
  t.match(first.events.at(-1)?.data, { code: 'chat.turn_cancelled' })
  t.match((await queued.request('GET', `/jobs/${one.job_id as string}`)).body, { status: 'cancelled' })

  // the chat actor was told the turn ended and started the next queued message (also waiting)
  const two = await eventually(async () => {
    const a = await cancel()
    return a.status === 'cancelled' ? a : undefined
  }, 'the second turn to run, then be cancelled')
  t.not(two.job_id, one.job_id, 'the next queued message became the running turn')
  t.equal(await second.ended, 200)
  t.match(second.events.at(-1)?.data, { code: 'chat.turn_cancelled' })
  t.same(await cancel(), { status: 'idle' })
})
