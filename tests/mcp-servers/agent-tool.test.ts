import t from 'tap'
import { startTestPlatform } from '../helpers/env.ts'
import { startFakeLlm } from '../helpers/fake-llm.ts'
import { requireLocalTls } from '../helpers/local-https.ts'
import { startRemoteMcp } from './remote-server.ts'

/*
 * A remote MCP server's tools as agent tools (`mcp__{ns}__{name}__{tool}`), with the fake LLM:
 * the agent's picked tools are offered with their input schemas (a locked argument hidden), the
 * LLM's call reaches the SDK's server over HTTPS on 198.51.100.32 with the secret header and the
 * locked value rendered from the chat input, and the result is in the LLM's next request. A user
 * who may read the server but not `use` it gets the tools offered and refused when one runs.
 * A tool that never returns ends at the server's timeout; a huge result is cut; a server that
 * cannot be listed (a private address) offers nothing and the turn goes on.
 */
const ADDRESS = '198.51.100.32'
const tls = requireLocalTls(t, ADDRESS, ['mcp.test'])
const remote = await startRemoteMcp(tls)
t.teardown(() => remote.close())
const llm = await startFakeLlm()
t.teardown(() => llm.close())
const env = await startTestPlatform(t, { OUTBOUND_EXTRA_CA_FILE: tls.certFile })
const alice = await env.createUser('alice@test.local')
await env.sql(`insert into roles (name, permissions) values ('HelperGuests', $1)`, [
  JSON.stringify({
    'platform.agents/acme/helper.read:all': true,
    'platform.agents/acme/helper.chat:all': true,
    'platform.mcp-servers/acme/crm.read:all': true,
  }),
])
const bob = await env.createUser('bob@test.local', ['Users', 'HelperGuests'])
const url = (path: string) => `https://${ADDRESS}:${String(remote.port)}${path}`
const LOOKUP = 'mcp__acme__crm__lookup_contact'

type Sent = {
  messages: { role: string; content: unknown; tool_call_id?: string }[]
  tools?: {
    function: {
      name: string
      description: string
      parameters: { properties: Record<string, unknown>; required?: string[] }
    }
  }[]
}
type Message = { role: string; content: string; tool_call_id: string }

t.before(async () => {
  const mk = (path: string, body: unknown, token = alice.token) => env.create(path, body, token)
  await env.create('/api/v1/llm-providers', llm.provider())
  await mk('/api/v1/secrets', { namespace: 'acme', name: 'mcp-token', value: 'mcp-secret-1' })
  await mk('/api/v1/mcp-servers', {
    namespace: 'acme',
    name: 'crm',
    description: 'the CRM',
    url: url('/mcp'),
    auth: { type: 'header', header: 'Authorization', prefix: 'Bearer ', secret: 'acme/mcp-token' },
    timeout_seconds: 2,
    max_result_bytes: 2000,
  })
  await mk('/api/v1/mcp-servers', { namespace: 'acme', name: 'internal', url: 'https://10.0.0.7/mcp' })
  await mk('/api/v1/agents', {
    namespace: 'acme',
    name: 'helper',
    system_prompt: 'You help the {{ team }} team.',
    input_schema: { type: 'object', properties: { team: { type: 'string' } }, required: ['team'] },
    enabled_mcp_servers: [
      {
        server: 'acme/crm',
        tools: ['lookup_contact', 'huge', 'sleep', 'fail'],
        parameters: { lookup_contact: { owner: '{{ team }}' } },
      },
      { server: 'acme/internal' },
    ],
  })
})

async function turn(token: string, replies: Parameters<typeof llm.push>, content: string) {
  const chat = await env.request('POST', '/agents/acme/helper/chats', { token, body: { input: { team: 'sales' } } })
  if (chat.status !== 201) throw new Error(chat.text)
  const id = (chat.body as { id: string }).id
  const from = llm.requests.length
  llm.push(...replies)
  const res = await env.request('POST', `/chats/${id}/messages`, { token, body: { content } })
  const full = (await env.request('GET', `/chats/${id}`, { token })).body as { messages: Message[] }
  return { res, messages: full.messages, sent: llm.requests.slice(from).map((r) => r.body as Sent) }
}

const toolResult = (messages: Message[], id: string): Record<string, unknown> =>
  JSON.parse(messages.find((m) => m.role === 'tool' && m.tool_call_id === id)?.content ?? '{}') as Record<
    string,
    unknown
  >

t.test(
  'the agent calls an MCP tool; the locked argument is hidden and enforced; the result reaches the LLM',
  async (t) => {
    const before = remote.seen.length
    const { res, messages, sent } = await turn(
      alice.token,
      [
        { tool_calls: [{ id: 'c1', name: LOOKUP, arguments: { id: '42', owner: 'someone-else' } }] },
        { text: 'Contact 42 belongs to sales.' },
      ],
      'who owns contact 42?',
    )
    t.equal(res.status, 200, res.text)
    t.match(res.body, { content: 'Contact 42 belongs to sales.' })
    const first = sent[0]
    t.same(
      first?.tools?.map((x) => x.function.name).sort(),
      ['mcp__acme__crm__fail', 'mcp__acme__crm__huge', LOOKUP, 'mcp__acme__crm__sleep'],
      "the picked tools only; the unreachable server's none",
    )
    const tool = first?.tools?.find((x) => x.function.name === LOOKUP)
    t.same(Object.keys(tool?.function.parameters.properties ?? {}), ['id'], 'the locked argument is hidden')
    t.same(tool?.function.parameters.required, ['id'])
    t.match(tool?.function.description, /Look up a contact by id \(MCP server acme\/crm: the CRM\)/)
    t.same(toolResult(messages, 'c1'), { result: 'contact 42 belongs to sales' }, 'the locked value won')
    t.match(JSON.stringify(sent[1]?.messages), /contact 42 belongs to sales/, "the result is in the LLM's next request")
    const calls = remote.seen.slice(before).filter((r) => r.body?.method === 'tools/call')
    t.equal(calls.length, 1)
    t.equal(calls[0]?.headers['authorization'], 'Bearer mcp-secret-1', 'the secret header reached the server')
    t.ok(typeof calls[0]?.headers['mcp-session-id'] === 'string', 'in a session')
  },
)

t.test("isError marks the tool result's error; a huge result is cut", async (t) => {
  const { messages } = await turn(
    alice.token,
    [
      {
        tool_calls: [
          { id: 'f1', name: 'mcp__acme__crm__fail', arguments: {} },
          { id: 'h1', name: 'mcp__acme__crm__huge', arguments: {} },
        ],
      },
      { text: 'done' },
    ],
    'try both',
  )
  t.same(toolResult(messages, 'f1'), { error: 'the CRM is down' })
  const huge = toolResult(messages, 'h1')
  t.match(huge, { truncated: true, max_result_bytes: 2000 })
  t.ok(Buffer.byteLength(String(huge['result'])) <= 2000, 'cut at max_result_bytes')
})

t.test('a tool that never returns ends at the timeout', async (t) => {
  const started = Date.now()
  const { res, messages } = await turn(
    alice.token,
    [{ tool_calls: [{ id: 's1', name: 'mcp__acme__crm__sleep', arguments: {} }] }, { text: 'it timed out' }],
    'sleep',
  )
  const ms = Date.now() - started
  t.equal(res.status, 200, res.text)
  t.match(toolResult(messages, 's1'), { code: 'mcp_server.timeout', error: /no answer within 2000 ms/ })
  t.ok(ms < 10_000, `the turn took ${String(ms)} ms`)
})

t.test('permission is checked when the tool runs: read but no use → refused', async (t) => {
  const before = remote.seen.length
  const { res, messages } = await turn(
    bob.token,
    [{ tool_calls: [{ id: 'b1', name: LOOKUP, arguments: { id: '42' } }] }, { text: 'I could not look it up.' }],
    'who is 42?',
  )
  t.equal(res.status, 200, res.text)
  t.match(toolResult(messages, 'b1'), { error: /not allowed to use MCP server acme\/crm/ })
  t.equal(
    remote.seen.slice(before).filter((r) => r.body?.method === 'tools/call').length,
    0,
    'no call reached the server',
  )
})

t.test('the kind: CRUD checks, the use permission in the reference', async (t) => {
  const bad = await env.request('POST', '/api/v1/mcp-servers', {
    token: alice.token,
    body: { namespace: 'acme', name: 'bad', url: 'ftp://x.test/mcp', auth: { type: 'header' } },
  })
  t.equal(bad.status, 422, bad.text)
  t.match(bad.text, /must be an http\(s\) URL/)
  t.match(bad.text, /required for auth type header/)
  const ref = await env.request('GET', '/api/v1/roles/permissions/reference', { token: env.adminToken })
  t.match(ref.text, /platform\.mcp-servers\/\{namespace\}\/\{name\}\.use:own/)
})
