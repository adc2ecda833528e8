import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.ts'
import { eventually } from '../helpers/eventually.ts'
import { createDb } from '../../src/platform/db.ts'
import { dailyBudget } from '../../src/usage/budget.ts'
import { nextUtcMidnight } from '../../src/usage/day.ts'

/*
 * The daily token budget (USAGE_DAILY_TOKEN_BUDGET = 100) on a platform with the fake LLM: a user
 * who spent it gets 429 `usage.daily_budget_exhausted` (detail naming the budget and the reset,
 * Retry-After) on a chat message, a streamed one, an invoke and the OpenAI adapter, and the
 * provider is not called; another user is unaffected; a message queued before the budget ran out
 * is refused when its turn starts; the next UTC day (a given clock over the same database) starts
 * from nothing.
 */
const BUDGET = 100
let env: TestPlatform
let llm: FakeLlm
let a: { id: string; token: string }
let b: { id: string; token: string }
let c: { id: string; token: string }

const mk = async (path: string, body: unknown, token?: string) => {
  const r = await env.request('POST', path, { body, ...(token === undefined ? {} : { token }) })
  if (r.status !== 201) throw new Error(`${path}: ${String(r.status)} ${r.text}`)
  return r.body as { id: string }
}
const say = (token: string, chatId: string, content: string) =>
  env.request('POST', `/chats/${chatId}/messages`, { token, body: { content } })

t.before(async () => {
  llm = await startFakeLlm()
  t.teardown(() => llm.close())
  env = await startTestPlatform(t, { USAGE_DAILY_TOKEN_BUDGET: String(BUDGET) })
  await mk('/api/v1/llm-providers', {
    name: 'fake',
    provider_type: 'openai',
    api_endpoint: llm.endpoint('openai'),
    api_key: 'sk-fake',
    default_model: 'fake-model',
    is_default: true,
  })
  await mk('/api/v1/agents', { namespace: 'budget', name: 'agent', system_prompt: 'Answer.' })
  await env.sql(`insert into roles (name, description, permissions) values ('Chatters', 'budget test', $1::jsonb)`, [
    JSON.stringify({
      'platform.agents/*/*.chat:all': true,
      'platform.agents/*/*.read:all': true,
      'platform.llm/fake.chat:all': true,
    }),
  ])
  a = await env.createUser('a@budget.test', ['Users', 'Chatters'])
  b = await env.createUser('b@budget.test', ['Users', 'Chatters'])
  c = await env.createUser('c@budget.test', ['Users', 'Chatters'])
})

t.test('a spent budget refuses the next message, stream, invoke and adapter call with 429', async (t) => {
  const chat = await mk('/agents/budget/agent/chats', {}, a.token)
  llm.push({ text: 'first', usage: { prompt_tokens: 60, completion_tokens: 30 } })
  t.equal((await say(a.token, chat.id, 'one')).status, 200, 'under the budget: answered')
  llm.push({ text: 'second', usage: { prompt_tokens: 5, completion_tokens: 5 } })
  t.equal((await say(a.token, chat.id, 'two')).status, 200, '90 spent: still under')
  // 100 now: reached
  const calls = llm.requests.length
  const refused = await say(a.token, chat.id, 'three')
  t.equal(refused.status, 429)
  const body = refused.body as { code: string; detail: string }
  t.equal(body.code, 'usage.daily_budget_exhausted')
  t.match(body.detail, /100 tokens/, 'the detail names the budget')
  t.match(body.detail, nextUtcMidnight(new Date()).toISOString(), 'and when it resets')
  const retryAfter = Number(refused.headers.get('retry-after'))
  t.ok(retryAfter >= 1 && retryAfter <= 86_400, `Retry-After in seconds until 00:00 UTC (${String(retryAfter)})`)

  const streamed = await env.request('POST', `/chats/${chat.id}/messages/stream`, {
    token: a.token,
    body: { content: 'three again' },
  })
  t.equal(streamed.status, 429, 'a streamed message too')
  const invoked = await env.request('POST', '/agents/budget/agent/invoke', { token: a.token, body: { message: 'hi' } })
  t.equal(invoked.status, 429, 'an invoke too')
  const adapter = await env.request('POST', '/adapters/openai/v1/chat/completions', {
    token: a.token,
    body: { model: 'fake/fake-model', messages: [{ role: 'user', content: 'hi' }] },
  })
  t.equal(adapter.status, 429, 'the OpenAI adapter too')
  t.equal((adapter.body as { error: { code: string } }).error.code, 'usage.daily_budget_exhausted', 'in its own shape')
  t.ok(adapter.headers.get('retry-after'), 'with Retry-After')
  const agentModel = await env.request('POST', '/adapters/openai/v1/chat/completions', {
    token: a.token,
    body: { model: 'agent:budget/agent', messages: [{ role: 'user', content: 'hi' }] },
  })
  t.equal(agentModel.status, 429, "and the adapter's agent models")
  t.equal(llm.requests.length, calls, 'the provider was not called')
  const { messages } = (await env.request('GET', `/chats/${chat.id}`, { token: a.token })).body as {
    messages: unknown[]
  }
  t.equal(messages.length, 4, 'nothing of the refused messages was stored')

  const own = (await env.request('GET', '/api/v1/usage?group_by=user', { token: a.token })).body as {
    totals: { total_tokens: number }
  }
  t.equal(own.totals.total_tokens, 100, 'the report says what was spent')
})

t.test('another user is unaffected', async (t) => {
  const chat = await mk('/agents/budget/agent/chats', {}, b.token)
  llm.push({ text: 'fine', usage: { prompt_tokens: 10, completion_tokens: 10 } })
  t.equal((await say(b.token, chat.id, 'hello')).status, 200)
})

t.test('a message queued before the budget ran out is refused when its turn starts', async (t) => {
  const chat = await mk('/agents/budget/agent/chats', {}, c.token)
  const before = llm.requests.length
  // the first turn holds the chat (its reply takes a while) and spends the whole budget
  llm.push({ text: 'slow', delay_ms: 1500, usage: { prompt_tokens: 150, completion_tokens: 50 } })
  const first = say(c.token, chat.id, 'one')
  await eventually(
    async () => (llm.requests.length > before ? true : undefined),
    'the first turn reaching the provider',
  )
  // accepted at the door (nothing spent yet), queued behind the first turn
  const second = say(c.token, chat.id, 'two')
  t.equal((await first).status, 200)
  const refused = await second
  t.equal(refused.status, 429, 'refused at the turn start')
  t.equal((refused.body as { code: string }).code, 'usage.daily_budget_exhausted')
  t.ok(refused.headers.get('retry-after'), 'with Retry-After')
  t.equal(llm.requests.length, before + 1, 'only the first turn called the provider')
})

t.test("the next UTC day starts from nothing (the same database, tomorrow's clock)", async (t) => {
  const db = await createDb(env.databaseUrl, { maximumPoolSize: 1 })
  t.teardown(() => db.end())
  const now = new Date()
  await t.rejects(
    dailyBudget(db, BUDGET, () => now).check(a.id),
    { code: 'usage.daily_budget_exhausted' },
    'today: spent',
  )
  const tomorrow = nextUtcMidnight(now)
  await t.resolves(dailyBudget(db, BUDGET, () => tomorrow).check(a.id), 'tomorrow 00:00 UTC: a new budget')
  await t.resolves(dailyBudget(db, 0, () => now).check(a.id), 'no budget (0): never refused')
})
