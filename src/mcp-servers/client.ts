import { authHeaders } from './access.ts'
import { mcpOutbound, requestTimeoutMs, type McpDeps, type McpServerRecord } from './deps.ts'
import { McpUnauthorized, type JsonRpcMessage, type McpEndpoint } from './exchange.ts'
import { openLegacySession } from './legacy-sse.ts'
import { mcpAccessToken, notConnected } from './oauth.ts'
import { mcpRequest, type McpConnection } from './session.ts'
import type { McpToolInfo } from './tool-cache.ts'

/*
 * What the platform asks a remote MCP server: its tools (`tools/list`, every page followed up to
 * MCP_CLIENT_MAX_TOOLS, cached per worker) and a tool call (`tools/call`, its content as text cut
 * at the server's max_result_bytes). Every request goes through the guarded client: exchange.ts
 * (Streamable HTTP) or legacy-sse.ts (the older HTTP+SSE transport).
 */
const MAX_PAGES = 100

export interface ToolCallResult {
  text: string
  isError: boolean
  /** The text was cut at max_result_bytes. */
  truncated: boolean
}

/** One operation's way to send requests: the kept Streamable HTTP session, or a legacy SSE stream of its own. */
type Request = (method: string, params: Record<string, unknown>) => Promise<unknown>

/**
 * Runs `op` against the server with its credentials: the header from a secret, or (auth type
 * oauth) the user's access token — refreshed and tried once more when the server answers 401, then
 * `mcp_server.oauth_not_connected` telling the user to connect. An SSE session (transport sse) is
 * opened for the operation and closed after it.
 */
async function withServer<T>(
  d: McpDeps,
  server: McpServerRecord,
  who: { userId: string | undefined; session: string },
  signal: AbortSignal | undefined,
  op: (request: Request) => Promise<T>,
): Promise<T> {
  const oauth = server.auth.type === 'oauth'
  if (oauth && who.userId === undefined) throw notConnected(server, 'none')
  const out = mcpOutbound(d)
  const onMessage = (m: JsonRpcMessage) => {
    if (m.method === 'notifications/tools/list_changed') {
      d.toolLists.invalidate(server.id)
      d.log.debug({ server: `${server.namespace}/${server.name}` }, 'MCP tool list changed')
    }
  }
  let token: string | undefined
  for (let attempt = 0; ; attempt++) {
    let headers: Record<string, string>
    if (oauth) {
      token = await mcpAccessToken(d, server, who.userId as string, attempt === 0 ? undefined : token)
      headers = { authorization: `Bearer ${token}` }
    } else headers = await authHeaders(d, server)
    const endpoint: McpEndpoint = {
      url: server.url,
      headers,
      timeoutMs: requestTimeoutMs(d.config, server.timeout_seconds),
      maxBytes: d.config.MCP_CLIENT_MAX_RESPONSE_BYTES,
      policy: out.policy,
      deps: out.deps,
      ...(signal === undefined ? {} : { signal }),
    }
    try {
      if (server.transport === 'sse') {
        const legacy = await openLegacySession(endpoint, onMessage)
        try {
          return await op(legacy.request)
        } finally {
          legacy.close()
        }
      }
      const c: McpConnection = {
        endpoint,
        sessions: d.sessions,
        sessionKey: `${server.id}:${String(server.updated_at)}:${who.session}`,
        onMessage,
      }
      return await op((method, params) => mcpRequest(c, method, params))
    } catch (err) {
      if (!(err instanceof McpUnauthorized) || !oauth) throw err
      if (attempt > 0) throw notConnected(server, 'refused')
      d.log.info({ server: `${server.namespace}/${server.name}` }, 'MCP server refused the OAuth token: refreshing')
    }
  }
}

function toolInfo(raw: unknown): McpToolInfo | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined
  const t = raw as { name?: unknown; description?: unknown; inputSchema?: unknown }
  if (typeof t.name !== 'string' || t.name === '') return undefined
  const schema =
    typeof t.inputSchema === 'object' && t.inputSchema !== null && !Array.isArray(t.inputSchema)
      ? (t.inputSchema as Record<string, unknown>)
      : { type: 'object', properties: {} }
  return {
    name: t.name,
    description: typeof t.description === 'string' ? t.description : '',
    inputSchema: schema,
  }
}

/**
 * The server's tools: from this worker's cache, else listed (pages followed, capped) and cached.
 * An OAuth server is listed with the token of `userId` (the chat's user), in a session of theirs.
 */
export async function listTools(
  d: McpDeps,
  server: McpServerRecord,
  signal?: AbortSignal,
  userId?: string,
): Promise<McpToolInfo[]> {
  const version = String(server.updated_at)
  const cached = d.toolLists.get(server.id, version, d.config.MCP_CLIENT_TOOLS_CACHE_SECONDS * 1000)
  if (cached !== undefined) return cached
  const session = server.auth.type === 'oauth' ? `list:${userId ?? ''}` : 'list'
  const tools = await withServer(d, server, { userId, session }, signal, (request) => pages(d, server, request))
  d.toolLists.set(server.id, version, tools)
  return tools
}

async function pages(d: McpDeps, server: McpServerRecord, request: Request): Promise<McpToolInfo[]> {
  const max = d.config.MCP_CLIENT_MAX_TOOLS
  const tools: McpToolInfo[] = []
  let cursor: string | undefined
  let cut = false
  for (let page = 0; page < MAX_PAGES; page++) {
    const result = (await request('tools/list', cursor === undefined ? {} : { cursor })) as {
      tools?: unknown
      nextCursor?: unknown
    } | null
    const listed = Array.isArray(result?.tools) ? (result.tools as unknown[]) : []
    for (const raw of listed) {
      const t = toolInfo(raw)
      if (t === undefined) continue
      if (tools.length >= max) {
        cut = true
        break
      }
      tools.push(t)
    }
    cursor = typeof result?.nextCursor === 'string' && result.nextCursor !== '' ? result.nextCursor : undefined
    if (cut || cursor === undefined) break
    if (page === MAX_PAGES - 1) cut = true
  }
  if (cut)
    d.log.warn(
      { server: `${server.namespace}/${server.name}`, kept: tools.length, max, pages: MAX_PAGES },
      'MCP server lists more tools than MCP_CLIENT_MAX_TOOLS (or pages): the rest are dropped',
    )
  return tools
}

/** A content item as text: text as it is, anything else described (images are not passed on). */
function contentText(item: unknown): string {
  if (typeof item !== 'object' || item === null) return ''
  const c = item as {
    type?: unknown
    text?: unknown
    mimeType?: unknown
    resource?: unknown
    uri?: unknown
    name?: unknown
  }
  if (c.type === 'text' && typeof c.text === 'string') return c.text
  if (c.type === 'resource' && typeof c.resource === 'object' && c.resource !== null) {
    const r = c.resource as { text?: unknown; uri?: unknown }
    return typeof r.text === 'string' ? r.text : `[resource ${String(r.uri ?? '')}]`
  }
  if (c.type === 'resource_link')
    return `[resource ${String(c.uri ?? '')}${typeof c.name === 'string' ? ` ${c.name}` : ''}]`
  if (c.type === 'image' || c.type === 'audio') return `[${c.type} ${String(c.mimeType ?? '')}]`
  return ''
}

/** Cut at `max` bytes without splitting a character. */
function cut(text: string, max: number): { text: string; truncated: boolean } {
  const bytes = Buffer.from(text, 'utf8')
  if (bytes.length <= max) return { text, truncated: false }
  // the decoder drops a partial character at the end of the slice
  const head = new TextDecoder('utf-8', { fatal: false }).decode(bytes.subarray(0, max)).replace(/\uFFFD$/, '')
  return { text: head, truncated: true }
}

/** `tools/call` in the caller's session; the content joined as text, cut at max_result_bytes. */
export async function callTool(
  d: McpDeps,
  server: McpServerRecord,
  userKey: string,
  tool: string,
  args: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<ToolCallResult> {
  const result = ((await withServer(d, server, { userId: userKey, session: `user:${userKey}` }, signal, (request) =>
    request('tools/call', { name: tool, arguments: args }),
  )) ?? {}) as {
    content?: unknown
    isError?: unknown
    structuredContent?: unknown
  }
  const parts = (Array.isArray(result.content) ? (result.content as unknown[]) : [])
    .map(contentText)
    .filter((s) => s !== '')
  let text = parts.join('\n')
  if (text === '' && result.structuredContent !== undefined) text = JSON.stringify(result.structuredContent)
  const out = cut(text, server.max_result_bytes)
  return { text: out.text, isError: result.isError === true, truncated: out.truncated }
}
