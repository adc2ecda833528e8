import t from 'tap'
import { startTestPlatform } from '../helpers/env.ts'
import { startFakeLlm } from '../helpers/fake-llm.ts'
import { requireLocalTls, startReceiver } from '../helpers/local-https.ts'

/*
 * A connector operation as an agent tool (`connector__{ns}__{name}__{op}`), with the fake LLM
 * provider: the tool is offered with the locked parameter hidden from its schema, the LLM's call
 * reaches the real upstream (HTTPS on 198.51.100.23) with the locked value rendered from the chat
 * input — whatever the LLM sent for it — and the agent answers with the result. A user who may
 * read the connector but not execute it gets the tool offered and refused when it runs.
 */
const ADDRESS = '198.51.100.23'
const tls = requireLocalTls(t, ADDRESS, ['crm.test'])
const upstream = await startReceiver(t, tls, (req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' })
  res.end(JSON.stringify({ name: 'Ada Lovelace', url: req.url }))
})
const llm = await startFakeLlm()
t.teardown(() => llm.close())
const env = await startTestPlatform(t, { OUTBOUND_EXTRA_CA_FILE: tls.certFile })
const alice = await env.createUser('alice@test.local')
await env.sql(`insert into roles (name, permissions) values ('HelperGuests', $1)`, [
  JSON.stringify({
    'platform.agents/acme/helper.read:all': true,
    'platform.agents/acme/helper.chat:all': true,
    'platform.connectors/acme/crm.read:all': true,
  }),
])
const bob = await env.createUser('bob@test.local', ['Users', 'HelperGuests'])
const TOOL = 'connector__acme__crm__get_contact'

t.before(async () => {
  const mk = (path: string, body: unknown, token = alice.token) => env.create(path, body, token)
  await env.create('/api/v1/llm-providers', llm.provider())
  await mk('/api/v1/secrets', { namespace: 'acme', name: 'crm-token', value: 'crm-secret-1' })
  await mk('/api/v1/connectors', {
    namespace: 'acme',
    name: 'crm',
    description: 'the CRM',
    base_url: `https://${ADDRESS}:${String(upstream.port)}`,
    auth: { type: 'bearer', secret: 'acme/crm-token' },
    operations: [
      {
        name: 'get_contact',
        description: 'Look up a contact',
        method: 'GET',
        path: '/contacts/{id}',
        parameters: {
          type: 'object',
          properties: { id: { type: 'string' }, owner: { type: 'string' } },
          required: ['id', 'owner'],
        },
        locations: { id: 'path', owner: 'query' },
      },
      {
        name: 'delete_contact',
        method: 'DELETE',
        path: '/contacts/{id}',
        parameters: { type: 'object', properties: { id: { type: 'string' } } },
        locations: { id: 'path' },
      },
    ],
  })
  await mk('/api/v1/agents', {
    namespace: 'acme',
    name: 'helper',
    system_prompt: 'You help the {{ team }} team.',
    input_schema: { type: 'object', properties: { team: { type: 'string' } }, required: ['team'] },
    enabled_connectors: [
      { connector: 'acme/crm', operations: ['get_contact'], parameters: { get_contact: { owner: '{{ team }}' } } },
    ],
  })
})

type Sent = {
  tools?: { function: { name: string; parameters: { properties: Record<string, unknown>; required?: string[] } } }[]
}

t.test('the agent calls the connector; the locked parameter is hidden and enforced', async (t) => {
  const chat = (
    await env.request('POST', '/agents/acme/helper/chats', { token: alice.token, body: { input: { team: 'sales' } } })
  ).body as { id: string }
  llm.push(
    { tool_calls: [{ id: 'c1', name: TOOL, arguments: { id: '42', owner: 'someone-else' } }] },
    { text: 'The contact is Ada Lovelace.' },
  )
  const res = await env.request('POST', `/chats/${chat.id}/messages`, {
    token: alice.token,
    body: { content: 'who is contact 42?' },
  })
  t.equal(res.status, 200, res.text)
  t.match(res.body, { content: 'The contact is Ada Lovelace.' })
  const first = llm.requests.find((r) => JSON.stringify(r.body).includes('You help the sales team'))?.body as Sent
  const tool = first.tools?.find((x) => x.function.name === TOOL)
  t.ok(tool, 'the operation is offered as a tool')
  t.same(
    first.tools?.map((x) => x.function.name),
    [TOOL],
    'only the picked operation',
  )
  t.same(Object.keys(tool?.function.parameters.properties ?? {}), ['id'], 'the locked parameter is hidden from the LLM')
  t.same(tool?.function.parameters.required, ['id'])
  const call = upstream.received.at(-1)
  t.equal(call?.url, '/contacts/42?owner=sales', "the locked value (rendered from the chat input) wins over the LLM's")
  t.equal(call?.headers['authorization'], 'Bearer crm-secret-1')
  const full = (await env.request('GET', `/chats/${chat.id}`, { token: alice.token })).body as {
    messages: { role: string; content: string; tool_call_id: string }[]
  }
  const result = full.messages.find((m) => m.role === 'tool' && m.tool_call_id === 'c1')
  t.match(JSON.parse(result?.content ?? '{}'), { status: 200, body: { name: 'Ada Lovelace' } })
})

t.test('permission is checked when the tool runs: read but no execute → refused', async (t) => {
  const chat = await env.request('POST', '/agents/acme/helper/chats', {
    token: bob.token,
    body: { input: { team: 'sales' } },
  })
  t.equal(chat.status, 201, chat.text)
  const before = upstream.received.length
  llm.push({ tool_calls: [{ id: 'b1', name: TOOL, arguments: { id: '42' } }] }, { text: 'I could not look it up.' })
  const res = await env.request('POST', `/chats/${(chat.body as { id: string }).id}/messages`, {
    token: bob.token,
    body: { content: 'who is 42?' },
  })
  t.equal(res.status, 200, res.text)
  const full = (await env.request('GET', `/chats/${(chat.body as { id: string }).id}`, { token: bob.token })).body as {
    messages: { role: string; content: string; tool_call_id: string }[]
  }
  const result = full.messages.find((m) => m.role === 'tool' && m.tool_call_id === 'b1')
  t.match(JSON.parse(result?.content ?? '{}'), { error: /not allowed to execute connector acme\/crm/ })
  t.equal(upstream.received.length, before, 'nothing reached the upstream')
})
