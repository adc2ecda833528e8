import t from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { externalPostgres } from '../helpers/external-pg.ts'
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.ts'

/*
 * The MCP server at /mcp with the official SDK as the client (Client +
 * StreamableHTTPClientTransport, credentials in requestInit.headers): initialize, the tools a
 * caller may run (and only those), calls of a function, a query and an agent (the fake LLM), a
 * raising function as isError, progress notifications on a long call, a namespace path; then the
 * wire by hand: malformed JSON, unknown method, a batch, no credentials (401 naming the protected
 * resource metadata), GET.
 */
let env: TestPlatform
let llm: FakeLlm
let userA: { id: string; token: string }
let userB: { id: string; token: string }
let keyA: string

const mk = async (path: string, body: unknown, token?: string) => {
  const r = await env.request('POST', path, { body, ...(token === undefined ? {} : { token }) })
  if (r.status !== 201) throw new Error(`${path}: ${r.text}`)
  return r.body as { id: string; key?: string }
}

async function connect(headers: Record<string, string>, path = '/mcp'): Promise<Client> {
  const client = new Client({ name: 'platform-test', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${env.base}${path}`), { requestInit: { headers } }))
  t.teardown(() => client.close())
  return client
}
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

t.before(async () => {
  llm = await startFakeLlm({ defaultReply: { text: 'hello from the agent' } })
  t.teardown(() => llm.close())
  env = await startTestPlatform(t, { MCP_PROGRESS_SECONDS: '0.2', MCP_TOOLS_PAGE_SIZE: '2' })
  const ext = await externalPostgres(t, 'mcp')
  await ext.sql('create table items (id int, label text)')
  await ext.sql("insert into items values (1, 'one'), (2, 'two'), (3, 'three')")
  await mk('/api/v1/llm-providers', {
    name: 'fake',
    provider_type: 'openai',
    api_endpoint: llm.endpoint('openai'),
    api_key: 'sk-fake',
    default_model: 'fake-model',
    is_default: true,
  })
  await mk('/api/v1/functions', {
    namespace: 'demo',
    name: 'double',
    description: 'Doubles x',
    code: 'def handler(input, context):\n    return {"y": input["x"] * 2, "user": context["user_email"]}\n',
    input_schema: { type: 'object', properties: { x: { type: 'number' } }, required: ['x'] },
  })
  await mk('/api/v1/functions', {
    namespace: 'demo',
    name: 'raises',
    code: 'def handler(input, context):\n    raise ValueError("no such order")\n',
  })
  await mk('/api/v1/functions', {
    namespace: 'demo',
    name: 'slow',
    code: 'import time\ndef handler(input, context):\n    time.sleep(1.5)\n    return "done"\n',
  })
  const conn = await mk('/api/v1/database-connections', { name: 'items', ...ext.spec })
  await mk('/api/v1/queries', {
    namespace: 'db',
    name: 'items',
    database_connection_id: conn.id,
    sql: 'select id, label from items where id >= :min order by id',
    input_schema: { type: 'object', properties: { min: { type: 'integer' } }, required: ['min'] },
  })
  await mk('/api/v1/agents', { namespace: 'demo', name: 'helper', system_prompt: 'You help.' })
  userA = await env.createUser('mcp-a@test.local')
  userB = await env.createUser('mcp-b@test.local')
  await mk(
    '/api/v1/functions',
    { namespace: 'alice', name: 'private', code: 'def handler(input, context):\n    return context["user_email"]\n' },
    userA.token,
  )
  keyA = String(
    (
      await mk(
        '/api/v1/api-keys',
        { name: 'mcp', permissions: { 'platform.functions/*/*.execute:own': true } },
        userA.token,
      )
    ).key,
  )
})

t.test('initialize negotiates the protocol and advertises tools', async (t) => {
  const client = await connect(bearer(env.adminToken))
  t.same(client.getServerCapabilities(), { tools: { listChanged: false } })
  t.equal(client.getServerVersion()?.name, 'agent-platform')
  t.same(await client.ping(), {})
})

t.test('tools/list: what the caller may run, paged by cursor', async (t) => {
  const admin = await connect(bearer(env.adminToken))
  const first = await admin.listTools()
  t.equal(first.tools.length, 2, 'a page of MCP_TOOLS_PAGE_SIZE')
  t.ok(first.nextCursor, 'with a cursor to the rest')
  const names: string[] = first.tools.map((x) => x.name)
  let cursor = first.nextCursor
  while (cursor !== undefined) {
    const page = await admin.listTools({ cursor })
    names.push(...page.tools.map((x) => x.name))
    cursor = page.nextCursor
  }
  t.same(names, [
    'agent.default.default',
    'agent.demo.helper',
    'fn.alice.private',
    'fn.demo.double',
    'fn.demo.raises',
    'fn.demo.slow',
    'query.db.items',
  ])
  const all = (await admin.listTools({ cursor: first.nextCursor as string })).tools
  const double = [...first.tools, ...all].find((x) => x.name === 'fn.demo.double')
  t.same(double?.inputSchema, { type: 'object', properties: { x: { type: 'number' } }, required: ['x'] })

  const a = await connect({ 'x-api-key': keyA })
  const aNames = (await a.listTools()).tools.map((x) => x.name)
  t.same(aNames, ['fn.alice.private'], "user A's key: only A's own function")
  const b = await connect(bearer(userB.token))
  const bNames = (await b.listTools()).tools.map((x) => x.name)
  t.notOk(bNames.includes('fn.alice.private'), "user B does not see A's private function")
  t.notOk(
    bNames.some((n) => n.startsWith('fn.demo.')),
    "nor the admin's",
  )
  await t.rejects(
    b.callTool({ name: 'fn.alice.private', arguments: {} }),
    /Unknown tool/,
    'calling it anyway: checked at call time',
  )
})

t.test('tools/call: a function, a raising function, a query, an agent', async (t) => {
  const admin = await connect(bearer(env.adminToken))
  const ok = await admin.callTool({ name: 'fn.demo.double', arguments: { x: 21 } })
  t.notOk(ok.isError)
  t.same(ok.structuredContent, { y: 42, user: 'admin@test.local' })
  t.same(JSON.parse((ok.content as { text: string }[])[0]?.text ?? ''), { y: 42, user: 'admin@test.local' })

  const raised = await admin.callTool({ name: 'fn.demo.raises', arguments: {} })
  t.equal(raised.isError, true, 'a function that raises is a tool error, not a JSON-RPC error')
  t.match((raised.content as { text: string }[])[0]?.text, /no such order/)

  await t.rejects(
    admin.callTool({ name: 'fn.demo.double', arguments: { x: 'nope' } }),
    /Invalid arguments/,
    'arguments off the schema: -32602',
  )
  await t.rejects(admin.callTool({ name: 'fn.demo.nothing', arguments: {} }), /Unknown tool/)

  const rows = await admin.callTool({ name: 'query.db.items', arguments: { min: 2 } })
  t.notOk(rows.isError)
  t.same((rows.structuredContent as { rows: unknown[] }).rows, [
    { id: 2, label: 'two' },
    { id: 3, label: 'three' },
  ])

  const turn = await admin.callTool({ name: 'agent.demo.helper', arguments: { message: 'hi' } })
  t.notOk(turn.isError)
  t.equal((turn.content as { text: string }[])[0]?.text, 'hello from the agent', 'the assistant’s final text')

  const a = await connect(bearer(userA.token))
  const mine = await a.callTool({ name: 'fn.alice.private', arguments: {} })
  t.equal((mine.content as { text: string }[])[0]?.text, '"mcp-a@test.local"', 'runs as the caller')
})

t.test('a long call with a progress token streams notifications/progress, then the result', async (t) => {
  const admin = await connect(bearer(env.adminToken))
  const seen: number[] = []
  const out = await admin.callTool({ name: 'fn.demo.slow', arguments: {} }, CallToolResultSchema, {
    onprogress: (p) => seen.push(p.progress),
  })
  t.equal((out.content as { text: string }[])[0]?.text, '"done"')
  t.ok(seen.length >= 2, `progress notifications arrived (${String(seen.length)})`)
  t.same(
    seen,
    seen.map((_, i) => i + 1),
    'increasing',
  )
})

t.test('/mcp/{namespace} and ?namespace= offer one namespace', async (t) => {
  const demo = await connect(bearer(env.adminToken), '/mcp/demo')
  const names: string[] = []
  let cursor: string | undefined
  do {
    const page = await demo.listTools(cursor === undefined ? {} : { cursor })
    names.push(...page.tools.map((x) => x.name))
    cursor = page.nextCursor
  } while (cursor !== undefined)
  t.same(names, ['agent.demo.helper', 'fn.demo.double', 'fn.demo.raises', 'fn.demo.slow'])
  await t.rejects(demo.callTool({ name: 'query.db.items', arguments: { min: 1 } }), /Unknown tool/)
  const db = await connect(bearer(env.adminToken), '/mcp?namespace=db')
  t.same(
    (await db.listTools()).tools.map((x) => x.name),
    ['query.db.items'],
  )
})

t.test('the wire: malformed JSON, unknown method, batch, notifications, no credentials, GET', async (t) => {
  const post = (body: string, headers: Record<string, string> = bearer(env.adminToken)) =>
    fetch(`${env.base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body,
    })
  const malformed = await post('{"jsonrpc": "2.0", "id": 1, "method": ')
  t.equal(malformed.status, 400)
  t.match(await malformed.json(), { jsonrpc: '2.0', id: null, error: { code: -32700 } })

  const unknown = await post(JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'resources/list' }))
  t.equal(unknown.status, 200)
  t.match(await unknown.json(), { jsonrpc: '2.0', id: 7, error: { code: -32601 } })

  const badParams = await post(JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 5 } }))
  t.match(await badParams.json(), { id: 8, error: { code: -32602 } })

  const batch = await post(JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'ping' }]))
  t.equal(batch.status, 400)
  t.match(await batch.json(), { error: { code: -32600 } })

  const notification = await post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }))
  t.equal(notification.status, 202)
  t.equal(await notification.text(), '')

  const badVersion = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }), {
    ...bearer(env.adminToken),
    'mcp-protocol-version': '1999-01-01',
  })
  t.equal(badVersion.status, 400)

  const anonymous = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }), {})
  t.equal(anonymous.status, 401)
  const challenge = anonymous.headers.get('www-authenticate') ?? ''
  const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1]
  t.equal(metadataUrl, `${env.base}/.well-known/oauth-protected-resource`, challenge)
  const metadata = (await (await fetch(metadataUrl as string)).json()) as Record<string, unknown>
  t.match(metadata, {
    resource: `${env.base}/mcp`,
    authorization_servers: [env.base],
    bearer_methods_supported: ['header'],
  })

  const get = await fetch(`${env.base}/mcp`, { headers: { ...bearer(env.adminToken), accept: 'text/event-stream' } })
  t.equal(get.status, 405, 'no server-initiated stream')
})

t.test('hostile input: every refusal is a JSON-RPC error or a 202, never a 5xx', async (t) => {
  const post = (body: string, headers: Record<string, string> = {}) =>
    fetch(`${env.base}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...bearer(env.adminToken),
        ...headers,
      },
      body,
    })
  const refused = async (what: string, body: string, status: number, code: number, headers = {}) => {
    const r = await post(body, headers)
    const text = await r.text()
    t.equal(r.status, status, `${what}: HTTP ${String(status)} (${text.slice(0, 200)})`)
    t.match(
      JSON.parse(text),
      { jsonrpc: '2.0', error: { code, message: String } },
      `${what}: JSON-RPC error ${String(code)}`,
    )
  }
  const limit = env.config.HTTP_MAX_BODY_BYTES
  const big = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: 'fn.demo.double', arguments: { x: 1, pad: 'x'.repeat(limit) } },
  })
  await refused('a message over HTTP_MAX_BODY_BYTES', big, 413, -32600)
  for (const value of ['42', '"ping"', 'null', 'true']) await refused(`the JSON value ${value}`, value, 400, -32600)
  await refused('an empty batch', '[]', 400, -32600)
  await refused('jsonrpc 1.0', JSON.stringify({ jsonrpc: '1.0', id: 1, method: 'ping' }), 400, -32600)
  await refused('an object id', JSON.stringify({ jsonrpc: '2.0', id: { a: 1 }, method: 'ping' }), 400, -32600)
  await refused('a number method', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 5 }), 400, -32600)
  await refused(
    'params as an array',
    JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: [1] }),
    400,
    -32600,
  )
  await refused('a null id on a request', JSON.stringify({ jsonrpc: '2.0', id: null, method: 'ping' }), 400, -32600)
  await refused('an empty body', '', 400, -32700)
  await refused('not UTF-8 JSON', '\u0000\u0001{', 400, -32700)
  const deep = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fn.demo.double","arguments":{"x":${'['.repeat(50_000)}${']'.repeat(50_000)}}}}`
  const nested = await post(deep)
  t.ok(nested.status < 500, `50,000 nested arrays: HTTP ${String(nested.status)}`)
  t.match(await nested.json(), { jsonrpc: '2.0', error: { code: Number } })

  const rpc = async (method: string, params: unknown) => {
    const r = await post(JSON.stringify({ jsonrpc: '2.0', id: 'x', method, params }))
    t.equal(r.status, 200)
    return (await r.json()) as { error?: { code: number; message: string } }
  }
  t.match(await rpc('tools/list', { cursor: '!!not-a-cursor!!' }), { error: { code: -32602, message: /cursor/ } })
  t.match(await rpc('tools/call', { name: 'fn.' + 'a'.repeat(120) }), { error: { code: -32602 } })
  t.match(await rpc('tools/call', { name: 'fn.demo.double', arguments: 'x=1' }), { error: { code: -32602 } })
  t.match(await rpc('initialize', { protocolVersion: 5 }), { error: { code: -32602 } })
  t.match(await rpc('tools/call', {}), { error: { code: -32602 } })
  t.match(await rpc('x'.repeat(200), {}), { error: { code: -32601 } })

  const unknownNote = await post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/whatever', params: {} }))
  t.equal(unknownNote.status, 202, 'an unknown notification is acknowledged')

  const wrongType = await post('{"jsonrpc":"2.0","id":1,"method":"ping"}', { 'content-type': 'text/plain' })
  t.ok(wrongType.status >= 400 && wrongType.status < 500, `text/plain: HTTP ${String(wrongType.status)}`)
})

t.test(
  'Origin: a browser page on another origin is refused 403 (DNS rebinding); loopback passes in development',
  async (t) => {
    const post = (origin: string) =>
      fetch(`${env.base}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...bearer(env.adminToken),
          origin,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      })
    for (const origin of ['http://evil.example.com', 'null', 'http://127.0.0.1.evil.example.com:8000', 'file://']) {
      const r = await post(origin)
      t.equal(r.status, 403, origin)
      t.match(await r.json(), { jsonrpc: '2.0', id: null, error: { code: -32600, message: /Origin/ } })
    }
    for (const origin of [env.base, 'http://localhost:5173', 'http://[::1]:8000']) {
      const r = await post(origin)
      t.equal(r.status, 200, origin)
      t.same(await r.json(), { jsonrpc: '2.0', id: 1, result: {} })
    }
  },
)
