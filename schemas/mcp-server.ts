import { Type as T } from '@sinclair/typebox'
import { Ref } from './common.ts'

/*
 * Remote MCP servers (the Model Context Protocol) whose tools agents use (`enabled_mcp_servers`;
 * the client is src/mcp-servers/). Only remote transports: a stdio server would run a command on
 * the platform's host, which is not offered.
 */

export const McpServerAuth = T.Object(
  {
    type: T.Optional(
      T.Union([T.Literal('none'), T.Literal('header')], {
        default: 'none',
        description: 'none, or a header whose value is a secret (e.g. Authorization: Bearer …)',
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
      'the secret (`<namespace>/<name>` of a secret) holds the header value; its owner must be able to read it',
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
    transport: T.Union([T.Literal('streamable-http')], {
      default: 'streamable-http',
      description: 'Streamable HTTP (MCP 2025-03-26 and later); stdio servers are not offered',
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
