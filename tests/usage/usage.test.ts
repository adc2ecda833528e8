import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.ts'
import { eventually } from '../helpers/eventually.ts'
import { utcDay } from '../../src/usage/day.ts'

/*
 * Usage accounting end to end with the fake LLM reporting usage (and, on some calls, a cost as
 * OpenAI-compatible gateways do): turns of two users on two agents with two providers/models, a
 * tool round among them, and a provider model through the OpenAI adapter; GET /api/v1/usage per
 * user, day, agent, provider and model; a user sees only their own (another user_id: 403); the
 * admin's filters and group_by; bad ranges and dimensions 422.
 */
let env: TestPlatform
let llm: FakeLlm
let a: { id: string; token: string }
let b: { id: string; token: string }
let betaId = ''
const today = utcDay(new Date())
const yesterday = utcDay(new Date(Date.now() - 86_400_000))

interface Row {
  day: string | null
  user_id: string | null
  agent: string | null
  agent_id: string | null
  provider: string | null
  model: string | null
  prompt_tokens: number
  completion_tokens: number
  total_tokens: number
  cost: number | null
  calls: number
}
interface Report {
  from: string
  to: string
  group_by: string[]
  rows: Row[]
  totals: Omit<Row, 'day' | 'user_id' | 'agent' | 'agent_id' | 'provider' | 'model'>
}

const mk = async (path: string, body: unknown, token?: string) => {
  const r = await env.request('POST', path, { body, ...(token === undefined ? {} : { token }) })
  if (r.status !== 201) throw new Error(`${path}: ${String(r.status)} ${r.text}`)
  return r.body as { id: string }
}
const say = async (token: string, chatId: string, content: string) => {
  const r = await env.request('POST', `/chats/${chatId}/messages`, { token, body: { content } })
  if (r.status !== 200) throw new Error(`message: ${String(r.status)} ${r.text}`)
}
const usage = async (query: string, token?: string) => {
  const r = await env.request('GET', `/api/v1/usage${query}`, token === undefined ? {} : { token })
  return { status: r.status, body: r.body as Report & { code?: string } }
}
/** The rows without their day (all of today's unless said). */
const strip = (rows: Row[]) => rows.map(({ day: _day, ...r }) => r)

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
  const second = await mk('/api/v1/llm-providers', {
    name: 'second',
    provider_type: 'openai',
    api_endpoint: llm.endpoint('openai'),
    api_key: 'sk-fake',
    default_model: 'other-model',
  })
  await mk('/api/v1/functions', {
    namespace: 'use',
    name: 'echo',
    description: 'echoes its input',
    code: 'def handler(input, context):\n    return input\n',
  })
  await mk('/api/v1/agents', { namespace: 'use', name: 'alpha', system_prompt: 'A.', enabled_functions: ['use/echo'] })
  betaId = (
    await mk('/api/v1/agents', {
      namespace: 'use',
      name: 'beta',
      system_prompt: 'B.',
      llm_provider_id: second.id,
      model: 'other-model',
    })
  ).id
  // both users may chat with every agent and call the fake provider's models through the adapter
  await env.sql(`insert into roles (name, description, permissions) values ('Chatters', 'usage test', $1::jsonb)`, [
    JSON.stringify({
      'platform.agents/*/*.chat:all': true,
      'platform.agents/*/*.read:all': true,
      'platform.llm/fake.chat:all': true,
    }),
  ])
  a = await env.createUser('a@usage.test', ['Users', 'Chatters'])
  b = await env.createUser('b@usage.test', ['Users', 'Chatters'])

  // A on alpha: a tool round (10+5, cost 0.01) then the answer (20+4, cost 0.02); then one more (3+2, no cost)
  const a1 = await mk('/agents/use/alpha/chats', {}, a.token)
  llm.push(
    {
      tool_calls: [{ name: 'use__echo', arguments: { x: 1 } }],
      usage: { prompt_tokens: 10, completion_tokens: 5, cost: 0.01 },
    },
    { text: 'done', usage: { prompt_tokens: 20, completion_tokens: 4, cost: 0.02 } },
  )
  await say(a.token, a1.id, 'echo something')
  llm.push({ text: 'again', usage: { prompt_tokens: 3, completion_tokens: 2 } })
  await say(a.token, a1.id, 'again')
  // A on beta (the second provider, another model): no cost reported
  const a2 = await mk('/agents/use/beta/chats', {}, a.token)
  llm.push({ text: 'beta', usage: { prompt_tokens: 7, completion_tokens: 3 } })
  await say(a.token, a2.id, 'hello beta')
  // B on alpha
  const b1 = await mk('/agents/use/alpha/chats', {}, b.token)
  llm.push({ text: 'b', usage: { prompt_tokens: 100, completion_tokens: 50, cost: 0.5 } })
  await say(b.token, b1.id, 'hello alpha')
  // B on the provider model through the OpenAI adapter: no agent
  llm.push({ text: 'direct', usage: { prompt_tokens: 1, completion_tokens: 2, cost: 0.001 } })
  const direct = await env.request('POST', '/adapters/openai/v1/chat/completions', {
    token: b.token,
    body: { model: 'fake/fake-model', messages: [{ role: 'user', content: 'hi' }] },
  })
  if (direct.status !== 200) throw new Error(`adapter: ${direct.text}`)
  // and a day before, recorded as a turn records it (the same function), for the day filters
  await env.sql(`select usage_record($1::jsonb)`, [
    JSON.stringify({
      day: yesterday,
      user_id: a.id,
      agent: 'use/alpha',
      agent_id: null,
      provider: 'fake',
      model: 'fake-model',
      prompt_tokens: 1000,
      completion_tokens: 1,
      total_tokens: 1001,
      cost: null,
      calls: 1,
    }),
  ])
})

t.test("the admin sees everyone's usage per day, user, agent, provider and model", async (t) => {
  // the adapter's usage is recorded after its answer: its row may come a moment later
  const r = await eventually(async () => {
    const x = await usage(`?from=${today}&to=${today}`)
    return x.body.rows.length >= 4 ? x : undefined
  }, "the adapter completion's usage")
  t.equal(r.status, 200)
  t.same(r.body.group_by, ['day', 'user', 'agent', 'provider', 'model'])
  t.ok(
    r.body.rows.every((x) => x.day === today),
    'every row is of today',
  )
  const alphaId = r.body.rows.find((x) => x.agent === 'use/alpha')?.agent_id
  t.match(alphaId, /^[0-9a-f-]{36}$/, "an agent's row carries its id")
  const mine = (u: string) => strip(r.body.rows.filter((x) => x.user_id === u))
  t.same(mine(a.id), [
    {
      user_id: a.id,
      agent: 'use/alpha',
      agent_id: alphaId,
      provider: 'fake',
      model: 'fake-model',
      prompt_tokens: 33,
      completion_tokens: 11,
      total_tokens: 44,
      cost: 0.03,
      calls: 3,
    },
    {
      user_id: a.id,
      agent: 'use/beta',
      agent_id: betaId,
      provider: 'second',
      model: 'other-model',
      prompt_tokens: 7,
      completion_tokens: 3,
      total_tokens: 10,
      cost: null,
      calls: 1,
    },
  ])
  t.same(mine(b.id), [
    {
      user_id: b.id,
      agent: '',
      agent_id: null,
      provider: 'fake',
      model: 'fake-model',
      prompt_tokens: 1,
      completion_tokens: 2,
      total_tokens: 3,
      cost: 0.001,
      calls: 1,
    },
    {
      user_id: b.id,
      agent: 'use/alpha',
      agent_id: alphaId,
      provider: 'fake',
      model: 'fake-model',
      prompt_tokens: 100,
      completion_tokens: 50,
      total_tokens: 150,
      cost: 0.5,
      calls: 1,
    },
  ])
  t.equal(r.body.totals.total_tokens, 44 + 10 + 3 + 150)
  t.equal(r.body.totals.calls, 6)
})

t.test('a user sees only their own usage; naming another user is 403', async (t) => {
  const own = await usage(`?from=${yesterday}&to=${today}`, a.token)
  t.equal(own.status, 200)
  t.ok(own.body.rows.length > 0 && own.body.rows.every((x) => x.user_id === a.id), "only A's rows")
  t.same(
    own.body.rows.map((x) => [x.day, x.agent, x.total_tokens]),
    [
      [yesterday, 'use/alpha', 1001],
      [today, 'use/alpha', 44],
      [today, 'use/beta', 10],
    ],
  )
  const named = await usage(`?user_id=${a.id}`, a.token)
  t.equal(named.status, 200, 'naming oneself is fine')
  const other = await usage(`?user_id=${a.id}`, b.token)
  t.equal(other.status, 403, "another user's id: 403")
  t.equal(other.body.code, 'auth.forbidden')
  const bOwn = await usage('', b.token)
  t.same(
    bOwn.body.rows.map((x) => x.user_id),
    [b.id, b.id],
    'without user_id: their own, by default the last 30 days',
  )
})

t.test('the admin filters by user, agent (name or id), provider, model and days, and groups', async (t) => {
  const range = `from=${yesterday}&to=${today}`
  const byUser = await usage(`?${range}&user_id=${a.id}&group_by=user`)
  t.same(strip(byUser.body.rows), [
    {
      user_id: a.id,
      agent: null,
      agent_id: null,
      provider: null,
      model: null,
      prompt_tokens: 1040,
      completion_tokens: 15,
      total_tokens: 1055,
      cost: 0.03,
      calls: 5,
    },
  ])
  t.equal(byUser.body.rows[0]?.day, null, 'a dimension left out is null')
  const beta = await usage(`?${range}&agent=use/beta`)
  const betaById = await usage(`?${range}&agent=${betaId}`)
  t.same(
    beta.body.rows.map((x) => x.total_tokens),
    [10],
  )
  t.same(betaById.body.rows, beta.body.rows, 'by name or by id')
  const second = await usage(`?${range}&provider=second&group_by=provider`)
  t.same(
    second.body.rows.map((x) => [x.provider, x.total_tokens]),
    [['second', 10]],
  )
  const model = await usage(`?${range}&model=fake-model&group_by=day,model`)
  t.same(
    model.body.rows.map((x) => [x.day, x.model, x.total_tokens]),
    [
      [yesterday, 'fake-model', 1001],
      [today, 'fake-model', 44 + 3 + 150],
    ],
  )
  const onlyYesterday = await usage(`?from=${yesterday}&to=${yesterday}&group_by=day`)
  t.same(
    onlyYesterday.body.rows.map((x) => [x.day, x.total_tokens]),
    [[yesterday, 1001]],
  )
  const perUser = await usage(`?from=${today}&to=${today}&group_by=user`)
  t.same(
    new Map(perUser.body.rows.map((x) => [x.user_id, x.total_tokens])),
    new Map([
      [a.id, 54],
      [b.id, 153],
    ]),
  )
})

t.test('bad ranges, dimensions and unknown fields: 422', async (t) => {
  const bad = async (query: string, why: string) => {
    const r = await usage(query)
    t.equal(r.status, 422, why)
  }
  await bad('?from=2026-03-02&to=2026-03-01', 'from after to')
  await bad('?from=2025-01-01&to=2026-03-01', 'more than 366 days')
  await bad('?from=2026-02-30&to=2026-03-01', 'not a calendar date')
  await bad('?to=tomorrow', 'not a date at all')
  await bad('?group_by=day,colour', 'an unknown dimension')
  await bad('?user_id=nobody', 'user_id not a uuid')
  await bad('?agent=Not%20An%20Agent', 'agent neither a reference nor an id')
  await bad('?modle=gpt-4o', 'a query field the report does not know (a misspelt filter must not widen it)')
  t.equal((await usage('?from=2025-03-01&to=2026-03-01')).status, 200, 'exactly 366 days is fine')
})
