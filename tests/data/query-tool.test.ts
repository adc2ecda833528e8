import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { externalPostgres, type ExternalPg } from '../helpers/external-pg.ts'
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.ts'

/*
 * Queries as agent tools, with the fake LLM provider: the tool `query__{ns}__{name}` is offered
 * with the query's input schema minus its locked parameters (unlocked ones carry their default),
 * a locked value (a template over the chat input) is always injected whatever the LLM sends, the
 * agent answers with the rows, and the caller's execute permission is checked when the tool runs.
 */
let env: TestPlatform
let llm: FakeLlm
let ext: ExternalPg
const post = async (path: string, body: unknown, token?: string) =>
  env.request('POST', path, { body, ...(token === undefined ? {} : { token }) })
const mk = async (path: string, body: unknown) => {
  const r = await post(path, body)
  if (r.status !== 201) throw new Error(`${path}: ${r.text}`)
  return r.body as { id: string }
}

t.before(async () => {
  llm = await startFakeLlm()
  t.teardown(() => llm.close())
  env = await startTestPlatform(t)
  ext = await externalPostgres(t, 'tool')
  await ext.sql('create table orders (id int, customer text, status text)')
  await ext.sql("insert into orders values (1, 'acme', 'open'), (2, 'acme', 'shipped'), (3, 'zeta', 'open')")
  await mk('/api/v1/llm-providers', {
    name: 'fake',
    provider_type: 'openai',
    api_endpoint: llm.endpoint('openai'),
    api_key: 'sk-fake',
    default_model: 'fake-model',
    is_default: true,
  })
  const conn = await mk('/api/v1/database-connections', { name: 'shop', ...ext.spec })
  await mk('/api/v1/queries', {
    namespace: 'db',
    name: 'orders',
    description: 'Orders of the current customer',
    database_connection_id: conn.id,
    sql: 'select id, status from orders where customer = :customer and (:status::text is null or status = :status) order by id',
    input_schema: {
      type: 'object',
      properties: { customer: { type: 'string' }, status: { type: 'string' } },
      required: ['customer'],
    },
  })
  await mk('/api/v1/agents', {
    namespace: 'demo',
    name: 'support',
    system_prompt: 'You help {{ customer }}.',
    input_schema: { type: 'object', properties: { customer: { type: 'string' } }, required: ['customer'] },
    enabled_queries: ['db/orders'],
    query_parameters: {
      'db/orders': { customer: { value: '{{ customer }}', locked: true }, status: { value: 'open', locked: false } },
    },
  })
})

t.test('the LLM sees the tool without the locked parameter; the locked value is injected', async (t) => {
  const chat = (await post('/agents/demo/support/chats', { input: { customer: 'acme' } })).body as { id: string }
  // the LLM tries to read another customer's orders: the locked parameter wins
  llm.push(
    { tool_calls: [{ id: 'q1', name: 'query__db__orders', arguments: { customer: 'zeta' } }] },
    { text: 'You have one open order (#1).' },
  )
  const res = await post(`/chats/${chat.id}/messages`, { content: 'what are my open orders?' })
  t.equal(res.status, 200, res.text)
  t.match(res.body, { content: 'You have one open order (#1).' })
  const first = llm.requests.find((r) => JSON.stringify(r.body).includes('You help acme'))?.body as {
    tools: { function: { name: string; description: string; parameters: Record<string, unknown> } }[]
  }
  const tool = first.tools.find((x) => x.function.name === 'query__db__orders')
  t.ok(tool, 'the query is offered as query__db__orders')
  t.equal(tool?.function.description, 'Orders of the current customer')
  t.same(
    Object.keys((tool?.function.parameters['properties'] ?? {}) as object),
    ['status'],
    'the locked parameter is hidden',
  )
  t.match(
    tool?.function.parameters,
    { properties: { status: { type: 'string', default: 'open' } } },
    'the unlocked one carries its default',
  )
  t.notOk(JSON.stringify(tool?.function.parameters['required'] ?? []).includes('customer'))
  const full = (await env.request('GET', `/chats/${chat.id}`)).body as {
    messages: { role: string; content: string; tool_call_id: string }[]
  }
  const result = JSON.parse(
    full.messages.find((m) => m.role === 'tool' && m.tool_call_id === 'q1')?.content ?? '{}',
  ) as { rows: { id: number }[] }
  t.same(
    result.rows.map((r) => r.id),
    [1],
    "acme's open order only: zeta's rows were not reachable",
  )
})

t.test('the LLM may override an unlocked parameter', async (t) => {
  const chat = (await post('/agents/demo/support/chats', { input: { customer: 'acme' } })).body as { id: string }
  llm.push(
    { tool_calls: [{ id: 'q2', name: 'query__db__orders', arguments: { status: 'shipped' } }] },
    { text: 'One shipped order.' },
  )
  await post(`/chats/${chat.id}/messages`, { content: 'and shipped ones?' })
  const full = (await env.request('GET', `/chats/${chat.id}`)).body as {
    messages: { role: string; content: string; tool_call_id: string }[]
  }
  const result = JSON.parse(full.messages.find((m) => m.tool_call_id === 'q2')?.content ?? '{}') as {
    rows: { id: number; status: string }[]
  }
  t.same(result.rows, [{ id: 2, status: 'shipped' }])
})

t.test('the caller needs the execute permission when the tool runs', async (t) => {
  // a user allowed to chat with the agent but not to execute the admin's query
  const u = await env.createUser('chatter@test.local')
  await env.sql(
    `insert into roles (name, permissions) values ('support-chat', '{"platform.agents/demo/support.chat:all": true, "platform.agents/demo/support.read:all": true, "platform.queries/db/orders.read:all": true}'::jsonb)`,
  )
  await env.sql(`insert into user_roles (user_id, role_id) select $1, id from roles where name = 'support-chat'`, [
    u.id,
  ])
  const created = await post('/agents/demo/support/chats', { input: { customer: 'acme' } }, u.token)
  t.equal(created.status, 201, created.text)
  const chat = created.body as { id: string }
  llm.push({ tool_calls: [{ id: 'q3', name: 'query__db__orders', arguments: {} }] }, { text: 'I cannot look that up.' })
  const res = await post(`/chats/${chat.id}/messages`, { content: 'orders?' }, u.token)
  t.equal(res.status, 200, res.text)
  const full = (await env.request('GET', `/chats/${chat.id}`, { token: u.token })).body as {
    messages: { role: string; content: string; tool_call_id: string }[]
  }
  const result = JSON.parse(full.messages.find((m) => m.tool_call_id === 'q3')?.content ?? '{}') as {
    error?: string
    code?: string
    rows?: unknown
  }
  t.match(result, { code: 'resource.not_found', error: /not found/ }, 'refused at execution time, no rows')
  t.notOk('rows' in result)
})
