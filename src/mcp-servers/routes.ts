import { OAuthCallbackQuery, OAuthStartResult, OAuthTokenStatus } from '../../schemas/connector.ts'
import { McpOAuthConnected, McpServerParams } from '../../schemas/mcp-server.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'

/** The OAuth callback of MCP servers (the redirect URI registered at their authorization servers) and its nonce cookie. */
export const MCP_OAUTH_CALLBACK_PATH = '/api/v1/oauth/mcp-servers/callback'
export const MCP_OAUTH_NONCE_COOKIE = 'platform_mcp_oauth_nonce'

/* The MCP server routes besides the generic CRUD of the kind: a user's OAuth connection. Data only. */
const m = { surface: 'management', auth: true, target: 'rpc' } as const
const tags = ['McpServer']
const base = '/api/v1/mcp-servers/{namespace}/{name}'

export const MCP_SERVER_ROUTES = {
  oauthStart: defineRoute({
    ...m,
    tags,
    id: 'mcp-servers.oauth-start',
    method: 'POST',
    path: `${base}/oauth/start`,
    summary:
      "Connect the caller's account to an MCP server with `auth.type: oauth`: discovers its authorization server (RFC 9728, RFC 8414), registers the platform (RFC 7591) unless a client id is set, and answers the URL to open in the browser (PKCE S256, `resource`); sets the HttpOnly nonce cookie binding the flow to that browser",
    params: McpServerParams,
    response: OAuthStartResult,
    permission: 'platform.mcp-servers/{namespace}/{name}.use:own',
    errors: [403, 404, 422, 502, 504],
  }),
  oauthStatus: defineRoute({
    ...m,
    tags,
    id: 'mcp-servers.oauth-status',
    method: 'GET',
    path: `${base}/oauth/token`,
    summary: "The caller's OAuth connection to this MCP server (never the tokens)",
    params: McpServerParams,
    response: OAuthTokenStatus,
    errors: [403, 404, 422],
  }),
  oauthDisconnect: defineRoute({
    ...m,
    tags,
    id: 'mcp-servers.oauth-disconnect',
    method: 'DELETE',
    path: `${base}/oauth/token`,
    summary:
      "Remove the caller's OAuth connection: the tokens are deleted, and revoked when the authorization server offers revocation (RFC 7009, best effort)",
    params: McpServerParams,
    status: 204,
    errors: [403, 404, 422],
  }),
  oauthCallback: defineRoute({
    surface: 'management',
    auth: false,
    target: 'rpc',
    tags,
    id: 'mcp-servers.oauth-callback',
    method: 'GET',
    path: MCP_OAUTH_CALLBACK_PATH,
    summary:
      "The authorization server's redirect back (no token: the single-use state identifies the flow, the nonce cookie the browser)",
    query: OAuthCallbackQuery,
    cookies: [MCP_OAUTH_NONCE_COOKIE],
    response: McpOAuthConnected,
    errors: [400, 403, 502],
  }),
}

export const mcpServerRoutes = (): RouteDef[] => Object.values(MCP_SERVER_ROUTES)
