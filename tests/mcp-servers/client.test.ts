import type { ServerResponse } from 'node:http'
import t from 'tap'
import { createLogger } from '../../src/kernel/log.ts'
import { callTool, listTools } from '../../src/mcp-servers/client.ts'
import { Writable } from 'node:stream'
import { requireLocalTls, startReceiver, type Received } from '../helpers/local-https.ts'
import { mcpClientSetup } from './client-setup.ts'
import { startRemoteMcp } from './remote-server.ts'

/*
 * The MCP client alone (src/mcp-servers/client.ts) against a real remote server (the SDK's, and a
 * hand-written one for pages and notifications) over HTTPS on 198.51.100.31 through the guarded
 * client: event-stream and JSON answers, the session kept and renewed after a 404, pages followed
 * and capped, the tool list cached and dropped on tools/list_changed, results cut, a hanging
 * server bounded, private addresses and plain HTTP refused. Servers without auth, so no database.
 */
const ADDRESS = '198.51.100.31'
const tls = requireLocalTls(t, ADDRESS, ['mcp.test'])
const remote = await startRemoteMcp(tls)
t.teardown(() => remote.close())
const { deps, server } = mcpClientSetup(tls, remote.port, 'streamable-http')

t.test('event-stream answers: tools listed with their schemas, a call in the kept session', async (t) => {
  const d = deps()
  const s = server('/mcp')
  const tools = await listTools(d, s)
  t.same(
    tools.map((x) => x.name),
    ['lookup_contact', 'shout', 'fail', 'huge', 'sleep'],
  )
  t.match(tools[0]?.inputSchema, { type: 'object', properties: { id: { type: 'string' } }, required: ['id', 'owner'] })
  const before = remote.seen.length
  const out = await callTool(d, s, 'u1', 'shout', { text: 'hi' })
  t.same(out, { text: 'HI\n!', isError: false, truncated: false }, 'text content joined')
  const mine = remote.seen.slice(before)
  t.same(
    mine.map((r) => r.body?.method),
    ['initialize', 'notifications/initialized', 'tools/call'],
    "a user's first call opens its own session",
  )
  const sid = mine[2]?.headers['mcp-session-id']
  t.ok(typeof sid === 'string' && sid !== '', 'the Mcp-Session-Id is sent')
  t.equal(mine[2]?.headers['mcp-protocol-version'], '2025-06-18')
  const again = remote.seen.length
  await callTool(d, s, 'u1', 'shout', { text: 'again' })
  t.same(
    remote.seen.slice(again).map((r) => [r.body?.method, r.headers['mcp-session-id']]),
    [['tools/call', sid]],
    'the second call reuses the session',
  )
})

t.test('JSON answers; isError; a session the server forgot is renewed once', async (t) => {
  const d = deps()
  const s = server('/mcp-json')
  t.same((await callTool(d, s, 'u1', 'lookup_contact', { id: '7', owner: 'ops' })).text, 'contact 7 belongs to ops')
  t.same(await callTool(d, s, 'u1', 'fail', {}), { text: 'the CRM is down', isError: true, truncated: false })
  remote.dropSessions()
  const before = remote.seen.length
  t.equal((await callTool(d, s, 'u1', 'shout', { text: 'x' })).text, 'X\n!')
  t.same(
    remote.seen.slice(before).map((r) => r.body?.method),
    ['tools/call', 'initialize', 'notifications/initialized', 'tools/call'],
    '404 on the old session, then a new one',
  )
  // the SDK answers invalid arguments and unknown tools as tool results marked isError
  const bad = await callTool(d, s, 'u1', 'lookup_contact', { id: 7 })
  t.match(bad, { isError: true, text: /Invalid arguments for tool lookup_contact/ })
  t.match(await callTool(d, s, 'u1', 'nope', {}), { isError: true, text: /Tool nope not found/ })
  const rpc = await callTool(d, server('/paged'), 'u1', 'rpc-error', {}).catch((e: unknown) => e)
  t.match(
    rpc,
    { code: 'mcp_server.rpc_error', message: /no such tool \(code -32602\)/ },
    'a JSON-RPC error is the error',
  )
})

t.test('a huge result is cut at max_result_bytes without splitting a character', async (t) => {
  const d = deps()
  const out = await callTool(d, server('/mcp', { max_result_bytes: 1001 }), 'u1', 'huge', {})
  t.equal(out.truncated, true)
  t.ok(Buffer.byteLength(out.text) <= 1001)
  t.equal(out.text, 'é'.repeat(500))
  const small = await callTool(
    deps({ MCP_CLIENT_MAX_RESPONSE_BYTES: 64 * 1024 }),
    server('/mcp'),
    'u1',
    'huge',
    {},
  ).catch((e: unknown) => e)
  t.match(small, { code: 'outbound.response_too_large' }, 'an answer beyond MCP_CLIENT_MAX_RESPONSE_BYTES fails')
})

t.test('pages followed and capped; the list cached until tools/list_changed', async (t) => {
  const d = deps()
  const s = server('/paged')
  const lists = remote.pagedLists
  const all = await listTools(d, s)
  t.equal(all.length, 12)
  t.equal(remote.pagedLists - lists, 4, 'four pages of three')
  await listTools(d, s)
  t.equal(remote.pagedLists - lists, 4, 'the second listing is the cache')
  const out = await callTool(d, s, 'u1', 't1', {})
  t.equal(out.text, 'paged ok', 'the response after a notification split across writes, on a stream left open')
  await listTools(d, s)
  t.equal(remote.pagedLists - lists, 8, 'listed again after tools/list_changed')
  const capped = await listTools(deps({ MCP_CLIENT_MAX_TOOLS: 5 }), server('/paged'))
  t.same(
    capped.map((x) => x.name),
    ['t0', 't1', 't2', 't3', 't4'],
    'MCP_CLIENT_MAX_TOOLS',
  )
})

t.test('a server that never answers is cut at the timeout', async (t) => {
  const started = Date.now()
  const err = await listTools(deps(), server('/hang', { timeout_seconds: 1 })).catch((e: unknown) => e)
  const ms = Date.now() - started
  t.match(err, { code: 'mcp_server.timeout', status: 504 })
  t.ok(ms >= 900 && ms < 5000, `bounded (${String(ms)} ms)`)
  t.comment(`hanging server cut after ${String(ms)} ms`)
  const call = Date.now()
  const slow = await callTool(deps(), server('/mcp', { timeout_seconds: 1 }), 'u1', 'sleep', {}).catch(
    (e: unknown) => e,
  )
  t.match(slow, { code: 'mcp_server.timeout' }, 'a tool that never returns: its open stream is cut too')
  t.ok(Date.now() - call < 5000)
  const ceiling = await listTools(
    deps({ MCP_CLIENT_TIMEOUT_SECONDS: 0.5 }),
    server('/hang', { timeout_seconds: 60 }),
  ).catch((e: unknown) => e)
  t.match(ceiling, { code: 'mcp_server.timeout', message: /500 ms/ }, 'clamped to MCP_CLIENT_TIMEOUT_SECONDS')
})

t.test('private addresses and plain HTTP are refused before connecting', async (t) => {
  for (const url of [
    'https://127.0.0.1:9/mcp',
    'https://10.1.2.3/mcp',
    'https://169.254.169.254/mcp',
    'https://[::1]/mcp',
  ]) {
    const err = await listTools(deps(), server('', { url })).catch((e: unknown) => e)
    t.match(err, { code: 'outbound.private_address' }, url)
  }
  const plain = await listTools(deps(), server('', { url: `http://${ADDRESS}:${String(remote.port)}/mcp` })).catch(
    (e: unknown) => e,
  )
  t.match(plain, { code: 'outbound.not_https' })
})

/*
 * Hostile servers written by hand (helpers/local-https.ts receivers): one that answers every
 * request with an event stream of notifications that never carries the response, and one whose
 * tools/list is a single page of 10,000 tools.
 */
function handwritten(answer: (body: { id?: unknown; method?: string }, res: ServerResponse) => void) {
  return (r: Received, res: ServerResponse) => {
    const body = JSON.parse(r.body === '' ? '{}' : r.body) as { id?: unknown; method?: string }
    if (body.method === 'initialize') {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(
        JSON.stringify({
          jsonrpc: '2.0',
          id: body.id,
          result: {
            protocolVersion: '2025-06-18',
            capabilities: { tools: {} },
            serverInfo: { name: 'x', version: '1' },
          },
        }),
      )
    } else if (body.id === undefined) res.writeHead(202).end()
    else answer(body, res)
  }
}

t.test('a server that streams forever is cut at the deadline, or at the size cap', async (t) => {
  const streams = new Set<NodeJS.Timeout>()
  t.teardown(() => streams.forEach((x) => clearInterval(x)))
  const chatty = await startReceiver(
    t,
    tls,
    handwritten((_body, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      const note = `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x'.repeat(200) } })}\n\n`
      // a notification every few milliseconds, never the response
      const timer = setInterval(() => res.write(note), 5)
      streams.add(timer)
      res.once('close', () => {
        clearInterval(timer)
        streams.delete(timer)
      })
    }),
  )
  const url = `https://${ADDRESS}:${String(chatty.port)}/mcp`
  const started = Date.now()
  const err = await listTools(deps(), server('', { url, timeout_seconds: 1 })).catch((e: unknown) => e)
  const ms = Date.now() - started
  t.match(err, { code: 'mcp_server.timeout', status: 504 }, 'busy, but never the response: the deadline holds')
  t.ok(ms >= 900 && ms < 5000, `cut after ${String(ms)} ms`)
  const capped = await callTool(
    deps({ MCP_CLIENT_MAX_RESPONSE_BYTES: 16 * 1024 }),
    server('', { url, timeout_seconds: 30 }),
    'u1',
    'anything',
    {},
  ).catch((e: unknown) => e)
  t.match(capped, { code: 'outbound.response_too_large' }, 'or the size cap, before the deadline')
})

t.test('a 10,000-tool list is cut at MCP_CLIENT_MAX_TOOLS, and the cut is logged', async (t) => {
  const many = await startReceiver(
    t,
    tls,
    handwritten((body, res) => {
      const tools = Array.from({ length: 10_000 }, (_, i) => ({
        name: `tool_${String(i)}`,
        description: `tool number ${String(i)}`,
        inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
      }))
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result: { tools } }))
    }),
  )
  const lines: string[] = []
  const d = {
    ...deps(),
    log: createLogger({
      level: 'warn',
      destination: new Writable({
        write(chunk: Buffer, _enc, done) {
          lines.push(chunk.toString('utf8'))
          done()
        },
      }),
    }),
  }
  const s = server('', { url: `https://${ADDRESS}:${String(many.port)}/mcp` })
  const tools = await listTools(d, s)
  t.equal(tools.length, d.config.MCP_CLIENT_MAX_TOOLS, `kept ${String(tools.length)} of 10,000`)
  t.equal(tools.at(-1)?.name, `tool_${String(d.config.MCP_CLIENT_MAX_TOOLS - 1)}`, 'the first ones, in order')
  const warned = lines
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .find((l) => /MCP_CLIENT_MAX_TOOLS/.test(String(l['msg'])))
  t.match(warned, { level: 40, server: `acme/${s.name}`, kept: d.config.MCP_CLIENT_MAX_TOOLS }, 'logged as a warning')
})
