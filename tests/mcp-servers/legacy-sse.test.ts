import t from 'tap'
import { callTool, listTools } from '../../src/mcp-servers/client.ts'
import type { McpDeps } from '../../src/mcp-servers/deps.ts'
import { requireLocalTls } from '../helpers/local-https.ts'
import { mcpClientSetup } from './client-setup.ts'
import { startLegacySseServer } from './legacy-sse-server.ts'

/*
 * The older HTTP+SSE transport (MCP 2024-11-05, `transport: sse`) against the official SDK's
 * SSEServerTransport over HTTPS on 198.51.100.45, through the guarded client: the stream's
 * endpoint event read, messages POSTed there and answered on the stream, the stream closed after
 * each operation (also after a failure); a tool that never answers ends at the deadline, a huge
 * result at the size cap, an endpoint on another origin and a stream that never names one are
 * refused; the credentials go on the stream and on every post. Servers with header auth or none,
 * so no database (the secret is read through a stub resource service).
 */
const ADDRESS = '198.51.100.45'
const tls = requireLocalTls(t, ADDRESS, ['mcp.test'])
const remote = await startLegacySseServer(tls)
t.teardown(() => remote.close())
const { deps, server } = mcpClientSetup(tls, remote.port, 'sse')

t.test('tools listed and called over the SSE stream; each operation opens and closes its stream', async (t) => {
  const d = deps()
  const s = server('/sse')
  const from = remote.seen.length
  const tools = await listTools(d, s)
  t.same(
    tools.map((x) => x.name),
    ['lookup_contact', 'shout', 'fail', 'huge', 'sleep'],
  )
  t.match(tools[0]?.inputSchema, { type: 'object', required: ['id', 'owner'] })
  await remote.allClosed()
  t.pass('the stream of the listing is closed')
  const out = await callTool(d, s, 'u1', 'shout', { text: 'hi' })
  t.same(out, { text: 'HI\n!', isError: false, truncated: false })
  const failed = await callTool(d, s, 'u1', 'fail', {})
  t.same(failed, { text: 'the CRM is down', isError: true, truncated: false }, 'isError passed on')
  await remote.allClosed()
  t.same(
    remote.seen.slice(from).map((r) => `${r.method} ${r.path}${r.rpc === undefined ? '' : ` ${r.rpc}`}`),
    [
      'GET /sse',
      'POST /messages initialize',
      'POST /messages notifications/initialized',
      'POST /messages tools/list',
      'GET /sse',
      'POST /messages initialize',
      'POST /messages notifications/initialized',
      'POST /messages tools/call',
      'GET /sse',
      'POST /messages initialize',
      'POST /messages notifications/initialized',
      'POST /messages tools/call',
    ],
    'a stream per operation; messages posted to the endpoint the stream named',
  )
})

t.test('a tool that never answers ends at the deadline, and its stream is closed', async (t) => {
  const d = deps()
  const s = server('/sse', { timeout_seconds: 1 })
  await t.rejects(callTool(d, s, 'u1', 'sleep', {}), { code: 'mcp_server.timeout' })
  await remote.allClosed()
  t.pass('closed after the timeout')
})

t.test('the stream is cut at MCP_CLIENT_MAX_RESPONSE_BYTES', async (t) => {
  const d = deps({ MCP_CLIENT_MAX_RESPONSE_BYTES: 100_000 })
  await t.rejects(callTool(d, server('/sse'), 'u1', 'huge', {}), { code: 'outbound.response_too_large' })
  await remote.allClosed()
  t.pass('closed after the cut')
})

t.test('an endpoint on another origin, or none at all, is refused', async (t) => {
  const d = deps()
  await t.rejects(listTools(d, server('/sse-elsewhere')), {
    code: 'mcp_server.protocol_error',
    message: /another origin/,
  })
  const silent = server('/sse-silent', { timeout_seconds: 1 })
  await t.rejects(listTools(d, silent), { code: 'mcp_server.timeout', message: /endpoint event/ })
  await remote.allClosed()
  t.pass('both streams closed')
})

t.test('the header credential goes on the stream and on every post', async (t) => {
  const d = deps()
  d.resources = {
    loadMany: async () => [{ id: 'sec-1', owner_id: 'owner-1', is_active: true }],
    secretsOf: async () => ({ value: 'sse-secret' }),
  } as unknown as McpDeps['resources']
  const s = server('/sse', {
    owner_id: 'owner-1',
    auth: { type: 'header', header: 'Authorization', prefix: 'Bearer ', secret: 'acme/token' },
  })
  const from = remote.seen.length
  await callTool(d, s, 'u1', 'shout', { text: 'x' })
  const mine = remote.seen.slice(from)
  t.equal(mine.length, 4)
  t.ok(
    mine.every((r) => r.headers.authorization === 'Bearer sse-secret'),
    'Authorization on the GET and the three POSTs',
  )
})

t.test('plain HTTP and private addresses are refused as on the Streamable HTTP path', async (t) => {
  const d = deps()
  await t.rejects(listTools(d, server('/sse', { url: `http://${ADDRESS}:${String(remote.port)}/sse` })), {
    code: /^outbound\./,
  })
  await t.rejects(listTools(d, server('/sse', { url: 'https://10.0.0.7/sse' })), { code: /^outbound\./ })
})
