import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.ts'

/*
 * Invoke sessions under concurrency: the first invokes with one new session_key, sent at the same
 * time, all get the same chat (the unique index on live sessions must not answer 500), and every
 * message is answered in it; concurrent resets leave exactly one live chat for the key.
 */
let env: TestPlatform
let llm: FakeLlm

t.before(async () => {
  llm = await startFakeLlm({ defaultReply: { text: 'ok' } })
  t.teardown(() => llm.close())
  env = await startTestPlatform(t)
  const mk = async (path: string, body: unknown) => {
    const r = await env.request('POST', path, { body })
    if (r.status !== 201) throw new Error(`${path}: ${r.text}`)
  }
  await mk('/api/v1/llm-providers', {
    name: 'fake',
    provider_type: 'openai',
    api_endpoint: llm.endpoint('openai'),
    api_key: 'sk-fake',
    default_model: 'fake-model',
    is_default: true,
  })
  await mk('/api/v1/agents', {
    namespace: 'sess',
    name: 'desk',
    system_prompt: 'You help {{ who }}.',
    input_schema: { type: 'object', properties: { who: { type: 'string' } } },
  })
})

type Invoked = { reply: string; chat_id: string; session_key: string | null }

t.test('8 concurrent first invokes with the same new session_key share one chat', async (t) => {
  const all = await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      env.request('POST', '/agents/sess/desk/invoke', {
        body: { message: `m${String(i)}`, session_key: 'ticket-42', input: { who: `caller ${String(i)}` } },
      }),
    ),
  )
  t.same(
    all.map((r) => r.status),
    Array(8).fill(200),
    all.find((r) => r.status !== 200)?.text ?? 'all 200',
  )
  const ids = new Set(all.map((r) => (r.body as Invoked).chat_id))
  t.equal(ids.size, 1, 'one chat_id for the key')
  t.ok(all.every((r) => (r.body as Invoked).reply === 'ok' && (r.body as Invoked).session_key === 'ticket-42'))
  const [chatId] = [...ids] as [string]
  const rows = await env.sql<{ n: string }>("select count(*) as n from chats where session_key = 'ticket-42'")
  t.equal(rows[0]?.n, '1', 'one row in chats for the key')
  const chat = (await env.request('GET', `/chats/${chatId}`)).body as {
    input: { who: string }
    messages: { role: string; content: string }[]
  }
  t.same(
    chat.messages
      .filter((m) => m.role === 'user')
      .map((m) => m.content)
      .sort(),
    ['m0', 'm1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7'],
    'every message was answered in that chat, one turn after another',
  )
  t.equal(chat.messages.filter((m) => m.role === 'assistant').length, 8)
  t.match(chat.input.who, /^caller \d$/, 'the input of the request that made the chat (input is used only on creation)')

  const again = await env.request('POST', '/agents/sess/desk/invoke', {
    body: { message: 'later', session_key: 'ticket-42' },
  })
  t.equal((again.body as Invoked).chat_id, chatId, 'a later invoke finds the chat')
})

t.test('concurrent resets leave one live chat for the key; other users have their own', async (t) => {
  const first = (
    await env.request('POST', '/agents/sess/desk/invoke', {
      body: { message: 'start', session_key: 'ticket-7', input: { who: 'A' } },
    })
  ).body as Invoked
  const resets = await Promise.all(
    Array.from({ length: 4 }, () =>
      env.request('POST', '/agents/sess/desk/invoke', {
        body: { message: 'over', session_key: 'ticket-7', reset: true, input: { who: 'A' } },
      }),
    ),
  )
  t.same(
    resets.map((r) => r.status),
    [200, 200, 200, 200],
    resets.find((r) => r.status !== 200)?.text ?? 'all 200',
  )
  t.notOk(
    resets.some((r) => (r.body as Invoked).chat_id === first.chat_id),
    'the first session chat was archived',
  )
  const live = await env.sql<{ id: string }>("select id from chats where session_key = 'ticket-7' and not archived")
  t.equal(live.length, 1, 'one live chat for the key')
  const next = (
    await env.request('POST', '/agents/sess/desk/invoke', { body: { message: 'next', session_key: 'ticket-7' } })
  ).body as Invoked
  t.equal(next.chat_id, live[0]?.id, 'the next invoke continues the live one')

  const b = await env.createUser('sess-b@test.local', ['Admins'])
  const theirs = await env.request('POST', '/agents/sess/desk/invoke', {
    token: b.token,
    body: { message: 'mine', session_key: 'ticket-7', input: { who: 'B' } },
  })
  t.equal(theirs.status, 200, theirs.text)
  t.not((theirs.body as Invoked).chat_id, next.chat_id, "the same key of another user is another user's session")
})
