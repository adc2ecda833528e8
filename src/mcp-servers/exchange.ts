import { AppError } from '../kernel/errors.ts'
import { guardedStream, type OutboundDeps } from '../platform/outbound-http.ts'
import { sseParser } from './sse.ts'

/*
 * One JSON-RPC message POSTed to a Streamable HTTP MCP endpoint, through the guarded outbound
 * client (guardedStream: the SSRF checks, pinned connection, no redirects, a size cap over the
 * body). The server answers 202 (a notification or response was accepted), `application/json`
 * (the response, or a batch holding it) or `text/event-stream`: events, each a JSON-RPC message —
 * server notifications and requests first, our response last. The stream is read only until our
 * response arrives, so a server keeping it open does not hold the call; one that never sends it is
 * cut at the deadline (a timer over the whole exchange, `mcp_server.timeout`) or at the size cap
 * (`outbound.response_too_large`). Messages other than our response are handed back (`seen`): the
 * caller acts on `notifications/tools/list_changed`.
 */
export interface JsonRpcMessage {
  jsonrpc: '2.0'
  id?: string | number | null
  method?: string
  params?: Record<string, unknown>
  result?: unknown
  error?: { code: number; message: string; data?: unknown }
}

export interface McpEndpoint {
  url: string
  /** Credentials (the server's auth header), sent with every request. */
  headers: Record<string, string>
  timeoutMs: number
  maxBytes: number
  policy: { httpsOnly: boolean; httpHosts: readonly string[]; allowPrivate: false }
  deps: OutboundDeps
  signal?: AbortSignal
}

export interface ExchangeResult {
  status: number
  /** `Mcp-Session-Id` when the server sent one. */
  sessionId: string | undefined
  /** Our response (requests only; undefined for a notification or a non-2xx answer). */
  reply: JsonRpcMessage | undefined
  /** Everything else the server sent on this stream. */
  seen: JsonRpcMessage[]
  /** The body of a non-2xx answer (bounded), for the error message. */
  errorText: string
  /** `WWW-Authenticate` of a 401 answer (the OAuth challenge, src/mcp-servers/oauth.ts). */
  challenge: string | undefined
}

export const protocolError = (detail: string): AppError => AppError.of('mcp_server.protocol_error', detail)

/**
 * The server refused the request's credentials (401). `challenge` is its WWW-Authenticate, which
 * names the protected-resource metadata for OAuth (RFC 9728 §5.1); client.ts refreshes or asks the
 * user to connect.
 */
export class McpUnauthorized extends AppError {
  readonly challenge: string
  constructor(challenge: string, detail: string) {
    super(502, 'mcp_server.unauthorized', detail)
    this.challenge = challenge
  }
}

export const challengeOf = (status: number, header: string | string[] | undefined): string | undefined =>
  status !== 401 ? undefined : Array.isArray(header) ? header.join(', ') : (header ?? '')
const ERROR_TEXT_MAX = 500

function isMessage(v: unknown): v is JsonRpcMessage {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && (v as { jsonrpc?: unknown }).jsonrpc === '2.0'
}

function messagesOf(text: string): JsonRpcMessage[] {
  let parsed: unknown
  try {
    parsed = JSON.parse(text) as unknown
  } catch {
    throw protocolError('the MCP server sent a message that is not JSON')
  }
  const list = Array.isArray(parsed) ? (parsed as unknown[]) : [parsed]
  return list.filter(isMessage)
}

export async function postMessage(
  ep: McpEndpoint,
  message: JsonRpcMessage,
  session: { id: string | undefined; protocolVersion: string | undefined },
): Promise<ExchangeResult> {
  const ctl = new AbortController()
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    ctl.abort()
  }, ep.timeoutMs)
  const outer = ep.signal
  const onAbort = () => ctl.abort(outer?.reason)
  if (outer?.aborted === true) onAbort()
  else outer?.addEventListener('abort', onAbort, { once: true })
  const headers: Record<string, string> = {
    ...ep.headers,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    ...(session.id === undefined ? {} : { 'mcp-session-id': session.id }),
    ...(session.protocolVersion === undefined ? {} : { 'mcp-protocol-version': session.protocolVersion }),
  }
  try {
    const s = await guardedStream(
      ep.url,
      {
        method: 'POST',
        headers,
        body: JSON.stringify(message),
        // the timer above is the deadline; the stream's own ones only back it up
        headTimeoutMs: ep.timeoutMs + 1000,
        idleTimeoutMs: ep.timeoutMs + 1000,
        ...ep.policy,
        maxResponseBytes: ep.maxBytes,
        signal: ctl.signal,
      },
      ep.deps,
    )
    const raw = s.headers['mcp-session-id']
    const sessionId = typeof raw === 'string' && raw !== '' ? raw : undefined
    const result: ExchangeResult = {
      status: s.status,
      sessionId,
      reply: undefined,
      seen: [],
      errorText: '',
      challenge: challengeOf(s.status, s.headers['www-authenticate']),
    }
    if (s.status < 200 || s.status >= 300) {
      const chunks: Buffer[] = []
      let size = 0
      for await (const chunk of s.body) {
        chunks.push(chunk)
        size += chunk.length
        if (size >= ERROR_TEXT_MAX) break
      }
      result.errorText = Buffer.concat(chunks).toString('utf8').slice(0, ERROR_TEXT_MAX)
      return result
    }
    const type = String(s.headers['content-type'] ?? '').toLowerCase()
    const wanted = message.id
    const take = (m: JsonRpcMessage) => {
      if (wanted !== undefined && m.id === wanted && m.method === undefined) result.reply = m
      else result.seen.push(m)
    }
    if (s.status === 202 || s.status === 204 || wanted === undefined) {
      s.close()
      return result
    }
    if (type.startsWith('text/event-stream')) {
      const parser = sseParser()
      for await (const chunk of s.body) {
        for (const ev of parser.push(chunk)) if (ev.event === 'message') messagesOf(ev.data).forEach(take)
        if (result.reply !== undefined) break
      }
      if (result.reply === undefined)
        for (const ev of parser.end()) if (ev.event === 'message') messagesOf(ev.data).forEach(take)
    } else if (type.startsWith('application/json')) {
      const chunks: Buffer[] = []
      for await (const chunk of s.body) chunks.push(chunk)
      messagesOf(Buffer.concat(chunks).toString('utf8')).forEach(take)
    } else {
      s.close()
      throw protocolError(`the MCP server answered ${type === '' ? 'without a content type' : type}`)
    }
    if (result.reply === undefined) throw protocolError('the MCP server ended its answer without a response')
    return result
  } catch (err) {
    if (timedOut) throw AppError.of('mcp_server.timeout', `no answer within ${String(ep.timeoutMs)} ms`)
    throw err
  } finally {
    clearTimeout(timer)
    outer?.removeEventListener('abort', onAbort)
  }
}
