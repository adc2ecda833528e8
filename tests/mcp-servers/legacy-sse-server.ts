import type { IncomingMessage, ServerResponse } from 'node:http'
import https from 'node:https'
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js'
import { listenLocal, type LocalTls } from '../helpers/local-https.ts'
import { sdkServer } from './remote-server.ts'

/*
 * A remote MCP server on the older HTTP+SSE transport (2024-11-05), built with the official SDK
 * (McpServer, the tools of remote-server.ts, on its SSEServerTransport) over HTTPS at a
 * documentation address:
 *   GET  /sse                   the event stream; its `endpoint` event names /messages?sessionId=…
 *   POST /messages?sessionId=…  a JSON-RPC message (answered 202; the response goes on the stream)
 *   GET  /sse-elsewhere         a hand-written stream whose endpoint is on another origin
 *   GET  /sse-silent            a stream that never sends its endpoint
 * Every stream's opening and closing is counted (`open`), so a test sees a session closed.
 */
export interface LegacySseServer {
  port: number
  /** Streams open now. */
  open: number
  /** Every request: path and headers (the credentials on the stream and on the posts). */
  seen: { method: string; path: string; headers: IncomingMessage['headers']; rpc?: string }[]
  /** Resolved when no stream is open. */
  allClosed(): Promise<void>
  close(): Promise<void>
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = []
  for await (const c of req) chunks.push(c as Buffer)
  const text = Buffer.concat(chunks).toString('utf8')
  return text === '' ? undefined : (JSON.parse(text) as unknown)
}

export async function startLegacySseServer(tls: LocalTls): Promise<LegacySseServer> {
  const transports = new Map<string, SSEServerTransport>()
  let waiters: (() => void)[] = []
  const s: LegacySseServer = {
    port: 0,
    open: 0,
    seen: [],
    allClosed: () => (s.open === 0 ? Promise.resolve() : new Promise((resolve) => waiters.push(resolve))),
    close: async () => undefined,
  }
  const track = (res: ServerResponse) => {
    s.open++
    res.once('close', () => {
      s.open--
      if (s.open === 0) {
        const w = waiters
        waiters = []
        for (const f of w) f()
      }
    })
  }
  const server = https.createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'https://x')
      if (req.method === 'GET' && url.pathname === '/sse') {
        s.seen.push({ method: 'GET', path: url.pathname, headers: req.headers })
        track(res)
        const t = new SSEServerTransport('/messages', res)
        transports.set(t.sessionId, t)
        res.once('close', () => transports.delete(t.sessionId))
        await sdkServer().connect(t)
        return
      }
      if (req.method === 'GET' && (url.pathname === '/sse-elsewhere' || url.pathname === '/sse-silent')) {
        s.seen.push({ method: 'GET', path: url.pathname, headers: req.headers })
        track(res)
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
        if (url.pathname === '/sse-elsewhere') res.write('event: endpoint\ndata: https://203.0.113.9/messages\n\n')
        else res.write(': nothing yet\n\n')
        return
      }
      if (req.method === 'POST' && url.pathname === '/messages') {
        const body = (await readJson(req)) as { method?: string } | undefined
        s.seen.push({ method: 'POST', path: url.pathname, headers: req.headers, rpc: body?.method ?? 'response' })
        const t = transports.get(url.searchParams.get('sessionId') ?? '')
        if (t === undefined) {
          res.writeHead(404).end('unknown session')
          return
        }
        await t.handlePostMessage(req, res, body)
        return
      }
      res.writeHead(404).end()
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500)
      res.end(String(err))
    })
  })
  const listening = await listenLocal(server, tls)
  s.port = listening.port
  s.close = listening.close
  return s
}
