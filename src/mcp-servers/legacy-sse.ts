import { randomUUID } from 'node:crypto'
import { AppError } from '../kernel/errors.ts'
import { guardedFetch, guardedStream } from '../platform/outbound-http.ts'
import { challengeOf, McpUnauthorized, protocolError, type JsonRpcMessage, type McpEndpoint } from './exchange.ts'
import { CLIENT_INFO, PROTOCOL_VERSION, rpcError } from './session.ts'
import { sseParser } from './sse.ts'

/*
 * The older HTTP+SSE transport (MCP 2024-11-05), for servers registered with `transport: sse`:
 * GET the server's URL as an event stream; its first `endpoint` event names where to POST
 * JSON-RPC messages (same origin as the stream, else refused); each POST is answered 202 and the
 * response arrives on the stream as a `message` event. The session lives as long as that stream,
 * so one is opened per operation (a tool list with its pages, one tool call) and closed when the
 * operation ends — nothing stays open between turns. Bounded like the Streamable HTTP path: the
 * endpoint event and every response each wait at most the request deadline (`mcp_server.timeout`);
 * the stream is cut at MCP_CLIENT_MAX_RESPONSE_BYTES over its whole life
 * (`outbound.response_too_large`); every request goes through the guarded client.
 */
const POST_ANSWER_MAX = 64 * 1024
const ACCEPTED_VERSIONS = new Set([PROTOCOL_VERSION, '2025-03-26', '2024-11-05'])

export interface LegacySession {
  request(method: string, params: Record<string, unknown>): Promise<unknown>
  close(): void
}

interface Pending {
  resolve(m: JsonRpcMessage): void
  reject(err: unknown): void
}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(AppError.of('mcp_server.timeout', `no ${what} within ${String(ms)} ms`)), ms)
  })
  return Promise.race([p, late]).finally(() => clearTimeout(timer))
}

/** Opens the stream, reads the endpoint, initializes; the caller closes it (`close`) when done. */
export async function openLegacySession(
  ep: McpEndpoint,
  onMessage: (m: JsonRpcMessage) => void,
): Promise<LegacySession> {
  const ctl = new AbortController()
  const outer = ep.signal
  const onAbort = () => ctl.abort(outer?.reason)
  if (outer?.aborted === true) onAbort()
  else outer?.addEventListener('abort', onAbort, { once: true })
  const pending = new Map<string, Pending>()
  let ended: unknown
  let closed = false
  const close = () => {
    if (closed) return
    closed = true
    outer?.removeEventListener('abort', onAbort)
    ctl.abort()
  }
  const fail = (err: unknown) => {
    ended ??= err
    for (const p of pending.values()) p.reject(err)
    pending.clear()
  }
  let endpointFound: (url: string) => void = () => undefined
  const endpoint = new Promise<string>((resolve, reject) => {
    endpointFound = resolve
    pending.set('', { resolve: () => undefined, reject })
  })
  // the endpoint promise must not be an unhandled rejection when the stream fails after it
  endpoint.catch(() => undefined)

  try {
    const s = await guardedStream(
      ep.url,
      {
        method: 'GET',
        headers: { ...ep.headers, accept: 'text/event-stream' },
        headTimeoutMs: ep.timeoutMs,
        // between a POST and its response the stream may be quiet up to the request deadline
        idleTimeoutMs: ep.timeoutMs + 1000,
        ...ep.policy,
        maxResponseBytes: ep.maxBytes,
        signal: ctl.signal,
      },
      ep.deps,
    )
    const challenge = challengeOf(s.status, s.headers['www-authenticate'])
    if (challenge !== undefined) {
      s.close()
      throw new McpUnauthorized(challenge, 'the MCP server refused the credentials of its SSE stream (HTTP 401)')
    }
    const type = String(s.headers['content-type'] ?? '').toLowerCase()
    if (s.status !== 200 || !type.startsWith('text/event-stream')) {
      s.close()
      throw protocolError(`the MCP server answered its SSE stream with HTTP ${String(s.status)} ${type}`.trim())
    }
    const origin = new URL(ep.url).origin
    void (async () => {
      const parser = sseParser()
      for await (const chunk of s.body) {
        for (const ev of parser.push(chunk)) {
          if (ev.event === 'endpoint') {
            let url: URL | undefined
            try {
              url = new URL(ev.data.trim(), ep.url)
            } catch {
              url = undefined
            }
            if (url === undefined || url.origin !== origin) {
              fail(protocolError('the MCP server named a message endpoint of another origin'))
              return
            }
            pending.delete('')
            endpointFound(url.toString())
            continue
          }
          if (ev.event !== 'message') continue
          let parsed: unknown
          try {
            parsed = JSON.parse(ev.data) as unknown
          } catch {
            fail(protocolError('the MCP server sent a message that is not JSON'))
            return
          }
          for (const m of (Array.isArray(parsed) ? parsed : [parsed]) as JsonRpcMessage[]) {
            if (typeof m !== 'object' || m === null || m.jsonrpc !== '2.0') continue
            const waiting = m.method === undefined && typeof m.id === 'string' ? pending.get(m.id) : undefined
            if (waiting !== undefined) {
              pending.delete(m.id as string)
              waiting.resolve(m)
            } else onMessage(m)
          }
        }
      }
      fail(protocolError('the MCP server closed its SSE stream'))
    })().catch((err: unknown) => fail(closed ? protocolError('the SSE session was closed') : err))

    const postUrl = await within(endpoint, ep.timeoutMs, 'endpoint event')
    const post = async (message: JsonRpcMessage): Promise<void> => {
      const res = await guardedFetch(
        postUrl,
        {
          method: 'POST',
          headers: { ...ep.headers, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: JSON.stringify(message),
          timeoutMs: ep.timeoutMs,
          ...ep.policy,
          maxResponseBytes: POST_ANSWER_MAX,
          maxRedirects: 0,
        },
        ep.deps,
      )
      const refused = challengeOf(res.status, res.headers['www-authenticate'])
      if (refused !== undefined)
        throw new McpUnauthorized(
          refused,
          `the MCP server refused the credentials of ${String(message.method)} (HTTP 401)`,
        )
      if (res.status < 200 || res.status >= 300)
        throw protocolError(
          `the MCP server answered ${String(message.method)} with HTTP ${String(res.status)}: ${res.body.toString('utf8').trim().slice(0, 300)}`,
        )
    }
    const request = async (method: string, params: Record<string, unknown>): Promise<unknown> => {
      if (ended !== undefined) throw ended
      const id = randomUUID()
      const reply = new Promise<JsonRpcMessage>((resolve, reject) => pending.set(id, { resolve, reject }))
      reply.catch(() => undefined)
      try {
        await post({ jsonrpc: '2.0', id, method, params })
        const m = await within(reply, ep.timeoutMs, `response to ${method}`)
        if (m.error !== undefined) throw rpcError(method, m)
        return m.result
      } finally {
        pending.delete(id)
      }
    }
    const init = (await request('initialize', {
      protocolVersion: PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: CLIENT_INFO,
    })) as { protocolVersion?: unknown } | null
    const version = typeof init?.protocolVersion === 'string' ? init.protocolVersion : ''
    if (!ACCEPTED_VERSIONS.has(version))
      throw protocolError(
        `the MCP server speaks protocol version ${version === '' ? '(none)' : version}, not one of ${[...ACCEPTED_VERSIONS].join(', ')}`,
      )
    await post({ jsonrpc: '2.0', method: 'notifications/initialized' })
    return { request, close }
  } catch (err) {
    close()
    throw err
  }
}
