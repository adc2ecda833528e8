import { randomUUID } from 'node:crypto'
import { AppError } from '../kernel/errors.ts'
import { McpUnauthorized, postMessage, protocolError, type JsonRpcMessage, type McpEndpoint } from './exchange.ts'

/*
 * An MCP session over Streamable HTTP: `initialize` (we offer protocol 2025-06-18 and accept a
 * server answering 2025-03-26), then `notifications/initialized`, then requests carrying the
 * `Mcp-Session-Id` the server returned (when it returned one) and `MCP-Protocol-Version`. Sessions
 * are kept per process (`SessionCache`, keyed by the caller: a server and a user, see tools.ts) so
 * a call does not initialize again; a server answering 404 to a kept session has ended it, and the
 * request is sent once more in a new session (as the specification says).
 */
export const PROTOCOL_VERSION = '2025-06-18'
const ACCEPTED_VERSIONS = new Set([PROTOCOL_VERSION, '2025-03-26'])
export const CLIENT_INFO = { name: 'agent-platform', version: '1.0.0' }

export interface Session {
  id: string | undefined
  protocolVersion: string
}

/** Kept sessions, oldest dropped beyond `max` (a Map keeps insertion order). */
export interface SessionCache {
  get(key: string): Session | undefined
  set(key: string, s: Session): void
  delete(key: string): void
}

export function createSessionCache(max = 1000): SessionCache {
  const map = new Map<string, Session>()
  return {
    get: (key) => map.get(key),
    set(key, s) {
      map.delete(key)
      map.set(key, s)
      if (map.size > max) map.delete(map.keys().next().value as string)
    },
    delete: (key) => void map.delete(key),
  }
}

export interface McpConnection {
  endpoint: McpEndpoint
  sessions: SessionCache
  /** Which kept session this caller uses. */
  sessionKey: string
  /** Every server message that is not our response (notifications such as tools/list_changed). */
  onMessage(m: JsonRpcMessage): void
}

function failed(method: string, status: number, text: string, challenge?: string): AppError {
  if (challenge !== undefined)
    return new McpUnauthorized(challenge, `the MCP server refused the credentials of ${method} (HTTP 401)`)
  const detail = text.trim() === '' ? '' : `: ${text.trim().slice(0, 300)}`
  return protocolError(`the MCP server answered ${method} with HTTP ${String(status)}${detail}`)
}

export function rpcError(method: string, m: JsonRpcMessage): AppError {
  const e = m.error
  return AppError.of(
    'mcp_server.rpc_error',
    `${method}: ${String(e?.message ?? 'error').slice(0, 500)} (code ${String(e?.code ?? '?')})`,
  )
}

async function initialize(c: McpConnection): Promise<Session> {
  const r = await postMessage(
    c.endpoint,
    {
      jsonrpc: '2.0',
      id: randomUUID(),
      method: 'initialize',
      params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: CLIENT_INFO },
    },
    { id: undefined, protocolVersion: undefined },
  )
  r.seen.forEach(c.onMessage)
  if (r.status < 200 || r.status >= 300 || r.reply === undefined)
    throw failed('initialize', r.status, r.errorText, r.challenge)
  if (r.reply.error !== undefined) throw rpcError('initialize', r.reply)
  const result = (r.reply.result ?? {}) as { protocolVersion?: unknown }
  const version = typeof result.protocolVersion === 'string' ? result.protocolVersion : ''
  if (!ACCEPTED_VERSIONS.has(version))
    throw protocolError(
      `the MCP server speaks protocol version ${version === '' ? '(none)' : version}, not one of ${[...ACCEPTED_VERSIONS].join(', ')}`,
    )
  const session: Session = { id: r.sessionId, protocolVersion: version }
  const done = await postMessage(c.endpoint, { jsonrpc: '2.0', method: 'notifications/initialized' }, session)
  if (done.status < 200 || done.status >= 300)
    throw failed('notifications/initialized', done.status, done.errorText, done.challenge)
  c.sessions.set(c.sessionKey, session)
  return session
}

/** One request in the caller's session (opened when there is none); its `result`. */
export async function mcpRequest(c: McpConnection, method: string, params: Record<string, unknown>): Promise<unknown> {
  for (let attempt = 0; ; attempt++) {
    const kept = c.sessions.get(c.sessionKey)
    const session = kept ?? (await initialize(c))
    const r = await postMessage(c.endpoint, { jsonrpc: '2.0', id: randomUUID(), method, params }, session)
    r.seen.forEach(c.onMessage)
    if (r.status === 404 && kept !== undefined && kept.id !== undefined && attempt === 0) {
      c.sessions.delete(c.sessionKey)
      continue
    }
    if (r.status < 200 || r.status >= 300 || r.reply === undefined)
      throw failed(method, r.status, r.errorText, r.challenge)
    if (r.reply.error !== undefined) throw rpcError(method, r.reply)
    return r.reply.result
  }
}
