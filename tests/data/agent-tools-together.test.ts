import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { externalPostgres, type ExternalPg } from '../helpers/external-pg.ts'
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.ts'

/*
 * The agent walkthrough of docs/data.md ("An agent that uses a query, a state and a file search together"): ONE agent with
 * `enabled_queries`, `enabled_stores` and `enabled_collections` answers a question with a query
 * tool, a state tool and a file-search tool called in the same round. The fake LLM provider scripts
 * the three calls and the answer; the tools run for real (an external Postgres database, a store
 * entry, a file's text) and the test checks that each result reached the model. The names and data
 * are those of docs/data.md's example, so its shown output is this test's.
 */
let env: TestPlatform
let llm: FakeLlm
let ext: ExternalPg

const must = async (path: string, body: unknown, status = 201) => {
  const r = await env.request('POST', path, { body })
  if (r.status !== status) throw new Error(`${path}: ${String(r.status)} ${r.text}`)
  return r.body as Record<string, unknown>
}

const REPLY =
  'ACME is a gold customer (contact: Ana) with one order, #1 at 10.50. The manual says: close the valve before refilling (notes.txt, line 1).'

t.before(async () => {
  llm = await startFakeLlm()
  t.teardown(() => llm.close())
  env = await startTestPlatform(t)
  ext = await externalPostgres(t, 'together')
  await ext.sql('create table orders (id int, customer text, total numeric(10,2), created_by uuid)')
  await ext.sql("insert into orders values (1, 'acme', 10.50, $1), (2, 'initech', 99.00, $1)", [env.adminId])
  await must('/api/v1/llm-providers', {
    name: 'fake',
    provider_type: 'openai',
    api_endpoint: llm.endpoint('openai'),
    api_key: 'sk-fake',
    default_model: 'fake-model',
    is_default: true,
  })
  // docs/data.md's "Database connections and queries", "Stores and states" and "Collections and files"
  const conn = await must('/api/v1/database-connections', { name: 'shop', ...ext.spec })
  await must('/api/v1/queries', {
    namespace: 'sales',
    name: 'orders',
    database_connection_id: conn['id'],
    description: 'Orders of a customer',
    sql: 'select id, total from orders where customer = :customer and created_by = :user_id::uuid order by id',
    input_schema: { type: 'object', properties: { customer: { type: 'string' } }, required: ['customer'] },
    timeout_ms: 2000,
    max_rows: 100,
  })
  await must('/api/v1/stores', { namespace: 'crm', name: 'memory', schema: { type: 'object' }, encrypted: true })
  await must('/stores/crm/memory/states', {
    key: 'customer:acme',
    value: { tier: 'gold', contact: 'Ana' },
    tags: ['customer'],
  })
  await must('/api/v1/collections', { namespace: 'docs', name: 'manuals' })
  const up = await env.request('POST', '/files/docs/manuals?name=notes.txt', {
    rawBody: 'Boiler B-200: close the valve before refilling.\nCheck the pressure weekly.\n',
    headers: { 'content-type': 'text/plain' },
  })
  if (up.status !== 201) throw new Error(up.text)
})

t.test('one agent answers with a query tool, a state tool and a file-search tool', async (t) => {
  const agent = await must('/api/v1/agents', {
    namespace: 'desk',
    name: 'assistant',
    system_prompt: 'You answer questions about customers. Use your tools.',
    enabled_queries: ['sales/orders'],
    enabled_stores: [{ store: 'crm/memory', access: 'readonly' }],
    enabled_collections: ['docs/manuals'],
  })
  t.match(agent, { enabled_queries: ['sales/orders'], enabled_stores: [{ store: 'crm/memory', access: 'readonly' }] })
  const chat = await must('/agents/desk/assistant/chats', {})

  llm.reset()
  llm.push(
    {
      tool_calls: [
        { id: 'call_q', name: 'query__sales__orders', arguments: { customer: 'acme' } },
        { id: 'call_s', name: 'retrieve_state', arguments: { store: 'crm/memory', key: 'customer:acme' } },
        { id: 'call_f', name: 'search_collection__docs__manuals', arguments: { query: 'valve' } },
      ],
    },
    { text: REPLY },
  )
  const res = await env.request('POST', `/chats/${String(chat['id'])}/messages`, {
    body: { content: 'What do we know about ACME, and how do I refill its boiler?' },
  })
  t.equal(res.status, 200, res.text)
  t.match(res.body, { role: 'assistant', content: REPLY })

  // the three kinds of tool were offered together in the first request
  const offered = ((llm.requests[0]?.body as { tools?: { function: { name: string } }[] } | undefined)?.tools ?? [])
    .map((x) => x.function.name)
    .sort()
  t.same(
    offered,
    [
      'get_file__docs__manuals',
      'list_state_keys',
      'query__sales__orders',
      'retrieve_state',
      'search_collection__docs__manuals',
    ],
    'readonly store: no save/delete; read-only collection: no write tools',
  )

  // each tool ran for real, and its result went back to the model in the second request
  const second = llm.requests[1]?.body as { messages: { role: string; content: string; tool_call_id?: string }[] }
  const result = (id: string): unknown =>
    JSON.parse(second.messages.find((m) => m.role === 'tool' && m.tool_call_id === id)?.content ?? 'null')
  t.match(
    result('call_q'),
    { operation: 'read', rows: [{ id: 1, total: '10.50' }], row_count: 1, truncated: false },
    'the query: acme only, bound as a parameter, as the chat user',
  )
  t.match(
    result('call_s'),
    { store: 'crm/memory', key: 'customer:acme', value: { tier: 'gold', contact: 'Ana' } },
    'the state, decrypted',
  )
  t.same(
    result('call_f'),
    {
      results: [
        {
          filename: 'notes.txt',
          version: 1,
          matches: [{ line: 1, text: 'Boiler B-200: close the valve before refilling.' }],
        },
      ],
    },
    'the file search',
  )

  // the chat's history holds the round: user, assistant with three calls, three tool results, answer
  const full = (await env.request('GET', `/chats/${String(chat['id'])}`)).body as {
    messages: { role: string; tool_calls?: unknown[] | null; content: string }[]
  }
  t.same(
    full.messages.map((m) => m.role),
    ['user', 'assistant', 'tool', 'tool', 'tool', 'assistant'],
  )
  t.equal(full.messages[1]?.tool_calls?.length, 3)
  t.equal(full.messages.at(-1)?.content, REPLY)
})
