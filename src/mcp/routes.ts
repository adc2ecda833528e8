import { JsonRpcResponse, McpBody, McpNamespaceParams, McpQuery, ProtectedResourceMetadata } from '../../schemas/mcp.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'

/*
 * The MCP server (docs/mcp.md): one JSON-RPC message per POST, answered as JSON, or as an SSE
 * stream for a tools/call asking for progress (`params._meta.progressToken`: the gateway listens
 * on a channel only then, format `mcp`). GET has no route: the gateway answers 405, which the
 * transport allows (no server-initiated stream). `/mcp/{namespace}` (or `?namespace=`) offers
 * only that namespace's tools.
 */
const mcp = {
  surface: 'runtime' as const,
  auth: true as const,
  target: 'rpc' as const,
  tags: ['MCP'],
  body: McpBody,
  query: McpQuery,
  response: JsonRpcResponse,
  errors: [400, 403, 413],
  jsonRpc: true,
  headers: ['mcp-protocol-version', 'origin'] as const,
  stream: { format: 'mcp' as const, bodyPath: ['params', '_meta', 'progressToken'] as const },
}

export const MCP_ROUTES = {
  mcp: defineRoute({
    ...mcp,
    id: 'mcp.post',
    method: 'POST',
    path: '/mcp',
    summary:
      'Model Context Protocol (Streamable HTTP, 2025-06-18): one JSON-RPC message — initialize, ping, tools/list, tools/call; notifications and responses answer 202. A tools/call with `_meta.progressToken` answers text/event-stream: notifications/progress, then the response',
  }),
  mcpNamespace: defineRoute({
    ...mcp,
    id: 'mcp.post-namespace',
    method: 'POST',
    path: '/mcp/{namespace}',
    params: McpNamespaceParams,
    summary: 'The MCP server limited to one namespace: only its functions, queries and agents are tools',
  }),
  protectedResource: defineRoute({
    surface: 'runtime',
    auth: false,
    target: 'rpc',
    tags: ['MCP'],
    id: 'mcp.protected-resource',
    method: 'GET',
    path: '/.well-known/oauth-protected-resource',
    summary:
      'OAuth 2.0 Protected Resource Metadata (RFC 9728) of /mcp: how to authenticate (a bearer access token or an API key)',
    headers: ['host'],
    response: ProtectedResourceMetadata,
  }),
}

export const mcpRoutes = (): RouteDef[] => Object.values(MCP_ROUTES)
