import { bind, type BoundRoute } from '../api/bind.ts'
import { callbackHeaders, disconnectReply, startReply } from '../oauth-client/replies.ts'
import { mcpServerFor } from './access.ts'
import type { McpDeps } from './deps.ts'
import { clearMcpNonceCookie, finishMcpFlow, mcpDisconnect, mcpTokenStatus, startMcpFlow } from './oauth.ts'
import { MCP_OAUTH_NONCE_COOKIE, MCP_SERVER_ROUTES as R } from './routes.ts'

/*
 * A user's OAuth connection to a remote MCP server (oauth.ts): start, status, disconnect, and the
 * callback. Who may connect is who may use the server (`use`, checked in mcpServerFor, the server
 * as it is now); each user connects, sees and removes only their own connection.
 */
export function mcpServerHandlers(d: McpDeps): BoundRoute[] {
  return [
    bind(R.oauthStart, async ({ principal: p, params }) => {
      const s = await mcpServerFor(d, p, params.namespace, params.name)
      const flow = await startMcpFlow(d, p.userId, s)
      return startReply(flow)
    }),
    bind(R.oauthStatus, async ({ principal: p, params }) => {
      const s = await mcpServerFor(d, p, params.namespace, params.name)
      return { body: await mcpTokenStatus(d, p.userId, s) }
    }),
    bind(R.oauthDisconnect, async ({ principal: p, params }) => {
      const s = await mcpServerFor(d, p, params.namespace, params.name)
      const { revoked } = await mcpDisconnect(d, p.userId, s)
      return disconnectReply(revoked)
    }),
    bind(R.oauthCallback, async ({ query, request }) => {
      const done = await finishMcpFlow(d, query, request.cookies?.[MCP_OAUTH_NONCE_COOKIE])
      return {
        body: {
          status: 'connected' as const,
          mcp_server: { namespace: done.server.namespace, name: done.server.name },
          scope: done.scope,
          expires_at: done.expires_at,
        },
        headers: callbackHeaders(clearMcpNonceCookie()),
      }
    }),
  ]
}
