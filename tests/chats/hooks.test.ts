import t from 'tap'
import { eventually } from '../helpers/eventually.ts'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.ts'

/*
 * Message hooks against the fake LLM, hostile first: a hook never gets skipped. User B may chat
 * with the admin's guarded agent; without the right to run its guard the message is blocked and
 * never reaches the LLM; `execute` alone (no `read`) runs the guard; a guard that raises or times
 * out follows `on_timeout`. Then what the product promises of hooks: null passes, `{content}`
 * replaces, `{block, reply}` answers, on_assistant_message hooks, async hooks that never hold the
 * turn, an inactive or deleted hook function.
 */
let env: TestPlatform
let llm: FakeLlm
type Msg = { role: string; content: string }
const post = async (path: string, body: unknown, token?: string) =>
  env.request('POST', path, { body, ...(token === undefined ? {} : { token }) })
const mk = async (path: string, body: unknown) => {
  const r = await post(path, body)
  if (r.status !== 201) throw new Error(`${path}: ${r.text}`)
  return r.body as { id: string }
}
const hook = (fn: string, o: { async?: boolean; on_timeout?: 'block' | 'passthrough' } = {}) => ({
  function: fn,
  async: o.async ?? false,
  on_timeout: o.on_timeout ?? 'passthrough',
})
const agent = (name: string, hooks: { user?: unknown[]; assistant?: unknown[] }) =>
  mk('/api/v1/agents', {
    namespace: 'guarded',
    name,
    system_prompt: `You are ${name}.`,
    hooks: { on_user_message: hooks.user ?? [], on_assistant_message: hooks.assistant ?? [] },
  })
/** Opens a chat with `guarded/<name>` and sends one message; the answer and what the LLM got meanwhile. */
async function say(name: string, content: string, token?: string) {
  const chat = await post(`/agents/guarded/${name}/chats`, {}, token)
  if (chat.status !== 201) throw new Error(chat.text)
  const id = (chat.body as { id: string }).id
  const before = llm.requests.length
  const res = await post(`/chats/${id}/messages`, { content }, token)
  return {
    chatId: id,
    res,
    body: res.body as { content: string; status: string },
    sent: llm.requests.slice(before).map((r) => r.body as { messages: Msg[] }),
  }
}

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
  const fn = (name: string, code: string, extra: Record<string, unknown> = {}) =>
    mk('/api/v1/functions', { namespace: 'guarded', name, code, ...extra })
  await fn(
    'guard',
    'def handler(input, context):\n    c = input["message"]["content"]\n    if "forbidden" in c:\n        return {"block": True, "reply": "Refused by the guard."}\n    return {"content": c.replace("secret", "[redacted]")}\n',
  )
  await fn('crash', 'def handler(input, context):\n    raise ValueError("the guard crashed")\n')
  await fn('slow', 'import time\ndef handler(input, context):\n    time.sleep(5)\n    return None\n', { timeout: 1 })
  await fn('noop', 'def handler(input, context):\n    return None\n')
  await fn('shout', 'def handler(input, context):\n    return {"content": input["message"]["content"].upper()}\n')
  await fn(
    'censor',
    'def handler(input, context):\n    if "leak" in input["message"]["content"].lower():\n        return {"block": True, "reply": "[withheld]"}\n    return None\n',
  )
  await fn('audit', 'import time\ndef handler(input, context):\n    time.sleep(3)\n    return {"seen": input}\n')
  await fn('off', 'def handler(input, context):\n    return None\n', { is_active: false })
  await agent('bot', { user: [hook('guarded/guard', { on_timeout: 'passthrough' })] })
  await agent('crash-block', { user: [hook('guarded/crash', { on_timeout: 'block' })] })
  await agent('crash-pass', { user: [hook('guarded/crash', { on_timeout: 'passthrough' })] })
  await agent('slow-block', { user: [hook('guarded/slow', { on_timeout: 'block' })] })
  await agent('slow-pass', { user: [hook('guarded/slow', { on_timeout: 'passthrough' })] })
  await agent('null', { user: [hook('guarded/noop')], assistant: [hook('guarded/noop')] })
  await agent('reply-hooks', { assistant: [hook('guarded/shout'), hook('guarded/censor')] })
  await agent('async', {
    user: [hook('guarded/audit', { async: true })],
    assistant: [hook('guarded/audit', { async: true })],
  })
  await agent('inactive', { user: [hook('guarded/off', { on_timeout: 'passthrough' })] })
  await mk('/api/v1/agents', {
    namespace: 'guarded',
    name: 'tooled',
    system_prompt: 'You use tools.',
    enabled_functions: ['guarded/guard'],
  })
  await agent('gone', { user: [hook('guarded/never-written', { on_timeout: 'passthrough' })] })
  // B may read and chat with the guarded agents, and nothing of the functions
  await mk('/api/v1/roles', {
    name: 'GuardedChatters',
    permissions: { 'platform.agents/guarded/*.read:all': true, 'platform.agents/guarded/*.chat:all': true },
  })
  // C also may execute the guard, without reading it
  await mk('/api/v1/roles', {
    name: 'GuardRunners',
    permissions: { 'platform.functions/guarded/guard.execute:all': true },
  })
})

t.test('B may chat but not run the guard: the message is blocked and never reaches the LLM', async (t) => {
  const b = await env.createUser('hooks-b@test.local', ['Users', 'GuardedChatters'])
  t.equal(
    (await env.request('GET', '/api/v1/functions/guarded/guard', { token: b.token })).status,
    404,
    'B cannot see the guard',
  )
  const { body, sent, chatId } = await say('bot', 'hello, my secret is 42', b.token)
  t.match(body, { status: 'blocked', content: /hook guarded\/guard could not run/ })
  t.same(sent, [], 'the fake LLM got nothing')
  const chat = (await env.request('GET', `/chats/${chatId}`, { token: b.token })).body as { messages: Msg[] }
  t.same(
    chat.messages.map((m) => m.role),
    ['user', 'assistant'],
    'the blocked exchange is in the history',
  )
})

t.test('execute without read runs the guard', async (t) => {
  const c = await env.createUser('hooks-c@test.local', ['Users', 'GuardedChatters', 'GuardRunners'])
  t.equal(
    (await env.request('GET', '/api/v1/functions/guarded/guard', { token: c.token })).status,
    404,
    'C cannot read the guard',
  )
  llm.push({ text: 'noted' })
  const ok = await say('bot', 'my secret is 42', c.token)
  t.match(ok.body, { status: 'completed', content: 'noted' })
  t.same(
    ok.sent[0]?.messages.at(-1),
    { role: 'user', content: 'my [redacted] is 42' },
    'the guard rewrote the message before the LLM',
  )
  const blocked = await say('bot', 'something forbidden', c.token)
  t.match(blocked.body, { status: 'blocked', content: 'Refused by the guard.' })
  t.same(blocked.sent, [])
  // the execute endpoint too: execute alone is enough
  const run = await post(
    '/functions/guarded/guard/execute',
    { input: { message: { role: 'user', content: 'a secret' } } },
    c.token,
  )
  t.equal(run.status, 200, run.text)
  t.match(run.body, { result: { content: 'a [redacted]' } })
})

t.test('execute without read: the function is offered as an agent tool and runs; neither answers 404', async (t) => {
  const c = await env.createUser('hooks-c2@test.local', ['Users', 'GuardedChatters', 'GuardRunners'])
  llm.push(
    {
      tool_calls: [
        { id: 'g1', name: 'guarded__guard', arguments: { message: { role: 'user', content: 'top secret' } } },
      ],
    },
    { text: 'checked' },
  )
  const r = await say('tooled', 'check this', c.token)
  t.match(r.body, { status: 'completed', content: 'checked' })
  const first = r.sent[0] as unknown as { tools: { function: { name: string } }[] }
  t.same(
    first.tools.map((x) => x.function.name),
    ['guarded__guard'],
    'offered to a user who may only execute it',
  )
  const chat = (await env.request('GET', `/chats/${r.chatId}`, { token: c.token })).body as {
    messages: (Msg & { tool_call_id: string })[]
  }
  t.same(
    JSON.parse(chat.messages.find((m) => m.role === 'tool')?.content ?? 'null'),
    { content: 'top [redacted]' },
    'the tool ran',
  )
  const d = await env.createUser('hooks-d@test.local')
  const denied = await post('/functions/guarded/guard/execute', { input: {} }, d.token)
  const missing = await post('/functions/guarded/never-written/execute', { input: {} }, d.token)
  t.equal(denied.status, 404)
  t.same(
    [denied.status, (denied.body as { code: string }).code],
    [missing.status, (missing.body as { code: string }).code],
    'the same answer as a function that does not exist',
  )
})

t.test('a guard that raises follows on_timeout: block blocks, passthrough passes', async (t) => {
  const blocked = await say('crash-block', 'hello')
  t.match(blocked.body, { status: 'blocked', content: 'The message could not be checked; please try again.' })
  t.same(blocked.sent, [], 'the LLM never saw it')
  llm.push({ text: 'passed' })
  const passed = await say('crash-pass', 'hello')
  t.match(passed.body, { status: 'completed', content: 'passed' })
  t.same(passed.sent[0]?.messages.at(-1), { role: 'user', content: 'hello' }, 'unchanged')
})

t.test('a guard that times out follows on_timeout: block blocks, passthrough passes', async (t) => {
  const blocked = await say('slow-block', 'hello')
  t.match(blocked.body, { status: 'blocked', content: 'The message could not be checked; please try again.' })
  t.same(blocked.sent, [])
  llm.push({ text: 'passed late' })
  const passed = await say('slow-pass', 'hello')
  t.match(passed.body, { status: 'completed', content: 'passed late' })
})

t.test('a hook whose function is inactive or missing blocks, even with passthrough', async (t) => {
  const inactive = await say('inactive', 'hello')
  t.match(inactive.body, { status: 'blocked', content: /hook guarded\/off could not run/ })
  t.same(inactive.sent, [])
  const gone = await say('gone', 'hello')
  t.match(gone.body, { status: 'blocked', content: /hook guarded\/never-written could not run/ })
  t.same(gone.sent, [])
})

t.test('hooks returning null pass the message and the reply unchanged', async (t) => {
  llm.push({ text: 'Plain answer.' })
  const r = await say('null', 'plain question')
  t.match(r.body, { status: 'completed', content: 'Plain answer.' })
  t.same(r.sent[0]?.messages.at(-1), { role: 'user', content: 'plain question' })
  const chat = (await env.request('GET', `/chats/${r.chatId}`)).body as { messages: Msg[] }
  t.same(
    chat.messages.map((m) => [m.role, m.content]),
    [
      ['user', 'plain question'],
      ['assistant', 'Plain answer.'],
    ],
  )
})

t.test('on_assistant_message hooks rewrite the reply in order, and one may block it', async (t) => {
  llm.push({ text: 'quiet reply' })
  const r = await say('reply-hooks', 'hi')
  t.match(r.body, { status: 'completed', content: 'QUIET REPLY' })
  const stored = (await env.request('GET', `/chats/${r.chatId}`)).body as { messages: Msg[] }
  t.equal(stored.messages.at(-1)?.content, 'QUIET REPLY', 'the rewritten reply is what is stored')
  llm.push({ text: 'this would leak' })
  const b = await say('reply-hooks', 'hi')
  t.match(b.body, { content: '[withheld]' }, "the second hook saw the first one's rewrite and blocked")
})

t.test('async hooks run with the message and never hold the turn', async (t) => {
  llm.push({ text: 'fast answer' })
  const r = await say('async', 'audit me')
  t.match(r.body, { status: 'completed', content: 'fast answer' })
  t.same(r.sent[0]?.messages.at(-1), { role: 'user', content: 'audit me' }, 'an async hook does not rewrite')
  type Exec = {
    status: string
    input_data: { message: Msg; chat_id: string; agent: unknown; user_id: string }
    finished_at: Date
    trigger_id: string
  }
  const runs = await eventually(async () => {
    const rows = await env.sql<Exec>(
      "select status, input_data, finished_at, trigger_id from executions where trigger_type = 'hook' and chat_id = $1 order by trigger_id desc",
      [r.chatId],
    )
    return rows.length === 2 && rows.every((x) => x.status === 'completed') ? rows : undefined
  }, 'both async hooks to complete')
  t.same(
    runs.map((x) => x.trigger_id),
    [`on_user_message:${r.chatId}`, `on_assistant_message:${r.chatId}`],
  )
  t.match(runs[0]?.input_data, {
    message: { role: 'user', content: 'audit me' },
    chat_id: r.chatId,
    agent: { namespace: 'guarded', name: 'async' },
    user_id: env.adminId,
  })
  t.match(runs[1]?.input_data, { message: { role: 'assistant', content: 'fast answer' } })
  const [reply] = await env.sql<{ created_at: Date }>(
    "select created_at from chat_messages where chat_id = $1 and role = 'assistant'",
    [r.chatId],
  )
  t.ok(
    runs.every((x) => x.finished_at > (reply?.created_at ?? new Date())),
    'both hooks finished after the reply was stored: the turn did not wait',
  )
})
