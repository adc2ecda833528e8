import { randomUUID } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import https from 'node:https'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { z } from 'zod'
import { listenLocal, type LocalTls } from '../helpers/local-https.ts'

/*
 * A remote MCP server for the tests, built with the official SDK (McpServer on its Streamable HTTP
 * transport, stateful: it hands out Mcp-Session-Id) on node's https server at a documentation
 * address (helpers/local-https.ts), so the platform reaches it through the guarded client.
 *   /mcp       answers in event streams (the SDK's default)
 *   /mcp-json  answers application/json (enableJsonResponse)
 *   /hang      never answers
 *   /paged     a hand-written server: tools/list in pages of 3 (12 tools), a tools/call that
 *              announces notifications/tools/list_changed on its stream before its response
 * Tools of the SDK server: lookup_contact {id, owner}, shout {text}, fail (isError), huge (300 kB of
 * text), sleep (never returns).
 */
export interface SeenRequest {
  path: string
  headers: IncomingMessage['headers']
  body: { method?: string; params?: Record<string, unknown> } | undefined
}

export interface RemoteMcp {
  port: number
  seen: SeenRequest[]
  /** tools/list calls answered by /paged. */
  pagedLists: number
  /** Forgets every session of the SDK server: a kept Mcp-Session-Id is answered 404 from now on. */
  dropSessions(): void
  close(): Promise<void>
}

export function sdkServer(): McpServer {
  const server = new McpServer({ name: 'test-crm', version: '1.0.0' })
  server.registerTool(
    'lookup_contact',
    {
      description: 'Look up a contact by id',
      inputSchema: { id: z.string(), owner: z.string() },
    },
    ({ id, owner }) => ({ content: [{ type: 'text', text: `contact ${id} belongs to ${owner}` }] }),
  )
  server.registerTool(
    'shout',
    { description: 'Upper-cases a text', inputSchema: { text: z.string() } },
    ({ text }) => ({
      content: [
        { type: 'text', text: text.toUpperCase() },
        { type: 'text', text: '!' },
      ],
    }),
  )
  server.registerTool('fail', { description: 'Always fails' }, () => ({
    content: [{ type: 'text', text: 'the CRM is down' }],
    isError: true,
  }))
  server.registerTool('huge', { description: 'A very long answer' }, () => ({
    content: [{ type: 'text', text: 'é'.repeat(150_000) }],
  }))
  server.registerTool('sleep', { description: 'Never returns' }, () => new Promise<never>(() => undefined))
  return server
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = []
  for await (const c of req) chunks.push(c as Buffer)
  const text = Buffer.concat(chunks).toString('utf8')
  return text === '' ? undefined : (JSON.parse(text) as unknown)
}

const PAGED_TOOLS = Array.from({ length: 12 }, (_, i) => ({
  name: `t${String(i)}`,
  description: `tool ${String(i)}`,
  inputSchema: { type: 'object', properties: {} },
}))

function paged(
  remote: RemoteMcp,
  body: { id?: unknown; method?: string; params?: Record<string, unknown> },
  res: ServerResponse,
) {
  const reply = (result: unknown) => ({ jsonrpc: '2.0', id: body.id, result })
  if (body.method === 'initialize') {
    res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'paged-session' })
    res.end(
      JSON.stringify(
        reply({
          protocolVersion: '2025-03-26',
          capabilities: { tools: { listChanged: true } },
          serverInfo: { name: 'paged', version: '1' },
        }),
      ),
    )
    return
  }
  if (body.id === undefined) {
    res.writeHead(202).end()
    return
  }
  if (body.method === 'tools/list') {
    remote.pagedLists++
    const start = Number(body.params?.['cursor'] ?? '0')
    const next = start + 3 < PAGED_TOOLS.length ? String(start + 3) : undefined
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(
      JSON.stringify(
        reply({ tools: PAGED_TOOLS.slice(start, start + 3), ...(next === undefined ? {} : { nextCursor: next }) }),
      ),
    )
    return
  }
  if (body.params?.['name'] === 'rpc-error') {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ jsonrpc: '2.0', id: body.id, error: { code: -32602, message: 'no such tool' } }))
    return
  }
  // tools/call: an event stream with a notification first, split across writes mid-event
  res.writeHead(200, { 'content-type': 'text/event-stream' })
  const note = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' })
  res.write(`: comment\nevent: message\ndata: ${note.slice(0, 10)}`)
  res.write(`${note.slice(10)}\n\n`)
  res.write(`data: ${JSON.stringify(reply({ content: [{ type: 'text', text: 'paged ok' }] }))}\n\n`)
  // the stream stays open: the client stops reading at its response
}

export async function startRemoteMcp(tls: LocalTls): Promise<RemoteMcp> {
  const transports = new Map<string, StreamableHTTPServerTransport>()
  const hanging = new Set<ServerResponse>()
  const remote: RemoteMcp = {
    port: 0,
    seen: [],
    pagedLists: 0,
    dropSessions: () => transports.clear(),
    close: async () => undefined,
  }
  const server = https.createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
    void (async () => {
      const path = new URL(req.url ?? '/', 'https://x').pathname
      const body = (await readJson(req)) as SeenRequest['body']
      remote.seen.push({ path, headers: req.headers, body })
      if (path === '/hang') {
        hanging.add(res)
        return
      }
      if (path === '/paged') return paged(remote, body as Parameters<typeof paged>[1], res)
      const sid = req.headers['mcp-session-id']
      let transport = typeof sid === 'string' ? transports.get(sid) : undefined
      if (transport === undefined) {
        if (typeof sid === 'string') {
          res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"unknown session"}')
          return
        }
        const t: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          enableJsonResponse: path === '/mcp-json',
          onsessioninitialized: (id) => void transports.set(id, t),
        })
        await sdkServer().connect(t)
        transport = t
      }
      await transport.handleRequest(req, res, body)
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500)
      res.end(String(err))
    })
  })
  // every socket destroyed at close: hanging and streaming exchanges included
  const listening = await listenLocal(server, tls)
  remote.port = listening.port
  remote.close = async () => {
    await listening.close()
    await Promise.all([...transports.values()].map((x) => x.close()))
  }
  return remote
}
