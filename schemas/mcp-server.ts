import { Type as T } from '@sinclair/typebox'
import { Name, Ref } from './common.ts'

/*
 * Remote MCP servers (the Model Context Protocol) whose tools agents use (`enabled_mcp_servers`;
 * the client is src/mcp-servers/). Only remote transports: a stdio server would run a command on
 * the platform's host, which is not offered.
 */

export const McpServerAuth = T.Object(
  {
    type: T.Optional(
      T.Union([T.Literal('none'), T.Literal('header'), T.Literal('oauth')], {
        default: 'none',
        description:
          'none; a header whose value is a secret (e.g. Authorization: Bearer …); or oauth: OAuth 2.1 as the MCP authorization specification describes, each user connecting their own account (POST …/oauth/start)',
      }),
    ),
    header: T.Optional(
      T.String({
        minLength: 1,
        maxLength: 200,
        pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$",
        description: 'header: its name (default Authorization)',
      }),
    ),
    secret: T.Optional(Ref),
    client_id: T.Optional(
      T.String({
        minLength: 1,
        maxLength: 500,
        description:
          'oauth: a client registered in advance at the authorization server; default: registered dynamically (RFC 7591)',
      }),
    ),
    scopes: T.Optional(
      T.Array(T.String({ minLength: 1, maxLength: 200, pattern: '^[^\\s]+$' }), {
        maxItems: 50,
        description:
          "oauth: the scopes asked for; default: the server's 401 challenge, else its protected-resource metadata",
      }),
    ),
    prefix: T.Optional(
      T.String({
        maxLength: 100,
        description: 'header: text put before the secret value (e.g. `Bearer `); default none',
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'the secret (`<namespace>/<name>` of a secret) holds the header value (header) or the client secret of `client_id` (oauth); its owner must be able to read it',
  },
)

export const McpServerSpec = T.Object(
  {
    description: T.String({ default: '', maxLength: 4000 }),
    url: T.String({
      minLength: 1,
      maxLength: 2048,
      description: "the server's MCP endpoint; HTTPS unless an admin listed the host in CONNECTOR_HTTP_HOSTS",
    }),
    transport: T.Union([T.Literal('streamable-http'), T.Literal('sse')], {
      default: 'streamable-http',
      description:
        'streamable-http (MCP 2025-03-26 and later), or sse: the older HTTP+SSE transport (2024-11-05; `url` is the SSE endpoint); stdio servers are not offered',
    }),
    auth: T.Object(McpServerAuth.properties, { additionalProperties: false, default: { type: 'none' } }),
    timeout_seconds: T.Number({
      default: 30,
      exclusiveMinimum: 0,
      maximum: 600,
      description:
        'per request to the server (a tool call, one page of the tool list); clamped to MCP_CLIENT_TIMEOUT_SECONDS',
    }),
    max_result_bytes: T.Integer({
      default: 65536,
      minimum: 256,
      maximum: 4194304,
      description: "a tool result's text is cut beyond this many bytes (the cut is marked)",
    }),
  },
  { additionalProperties: false },
)

export const McpServerParams = T.Object({ namespace: Name, name: Name })

export const McpOAuthConnected = T.Object(
  {
    status: T.Literal('connected'),
    mcp_server: T.Object({ namespace: T.String(), name: T.String() }),
    scope: T.Union([T.String(), T.Null()]),
    expires_at: T.Union([T.String(), T.Null()]),
  },
  { title: 'McpOAuthConnected' },
)
