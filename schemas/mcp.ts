import { Type as T, type Static } from '@sinclair/typebox'
import { Namespace } from './common.ts'

/*
 * The Model Context Protocol server at /mcp (src/mcp/): JSON-RPC 2.0 messages over Streamable HTTP
 * (protocol revision 2025-06-18). The gateway checks the envelope (a JSON-RPC message, or an
 * array: a batch, which the handler refuses since 2025-06-18 has none); the handler checks each
 * method's params with the schemas below and answers -32602 when they do not match.
 */

const JsonRpcId = T.Union([T.String({ maxLength: 200 }), T.Integer()], { description: 'the request id' })

/** A request (with `id`) or a notification (without). */
export const JsonRpcRequest = T.Object(
  {
    jsonrpc: T.Literal('2.0'),
    id: T.Optional(JsonRpcId),
    method: T.String({ maxLength: 200 }),
    params: T.Optional(T.Record(T.String(), T.Unknown())),
  },
  { title: 'JsonRpcRequest' },
)
export type JsonRpcRequest = Static<typeof JsonRpcRequest>

/** A response the client sends back (to a server request; this server sends none, so it is only acknowledged). */
export const JsonRpcClientResponse = T.Object(
  {
    jsonrpc: T.Literal('2.0'),
    id: T.Union([JsonRpcId, T.Null()]),
    result: T.Optional(T.Unknown()),
    error: T.Optional(T.Record(T.String(), T.Unknown())),
  },
  { title: 'JsonRpcClientResponse' },
)

/** What POST /mcp accepts. A batch (array) is refused by the handler with -32600. */
export const McpBody = T.Union(
  [JsonRpcRequest, JsonRpcClientResponse, T.Array(T.Unknown(), { description: 'a JSON-RPC batch: refused' })],
  { title: 'McpMessage' },
)

/** What a request is answered with (`application/json`), or the last event of an SSE answer. */
export const JsonRpcResponse = T.Object(
  {
    jsonrpc: T.Literal('2.0'),
    id: T.Union([JsonRpcId, T.Null()]),
    result: T.Optional(T.Unknown()),
    error: T.Optional(
      T.Object({ code: T.Integer(), message: T.String(), data: T.Optional(T.Unknown()) }, { title: 'JsonRpcError' }),
    ),
  },
  { title: 'JsonRpcResponse' },
)

export const McpNamespaceParams = T.Object({ namespace: Namespace })
export const McpQuery = T.Object({
  namespace: T.Optional(Namespace),
})

const ProgressToken = T.Union([T.String({ maxLength: 200 }), T.Integer()])
const RequestMetaField = T.Optional(T.Object({ progressToken: T.Optional(ProgressToken) }))

export const InitializeParams = T.Object({
  protocolVersion: T.String({ maxLength: 50 }),
  capabilities: T.Record(T.String(), T.Unknown()),
  clientInfo: T.Object({ name: T.String({ maxLength: 200 }), version: T.String({ maxLength: 200 }) }),
  _meta: RequestMetaField,
})

export const ToolsListParams = T.Object({
  cursor: T.Optional(T.String({ maxLength: 200 })),
  _meta: RequestMetaField,
})

export const ToolsCallParams = T.Object({
  name: T.String({ maxLength: 128 }),
  arguments: T.Optional(T.Record(T.String(), T.Unknown())),
  _meta: RequestMetaField,
})
export type ToolsCallParams = Static<typeof ToolsCallParams>

/** The input of an agent tool: one user message, and the agent's input variables when it declares some. */
export const AgentToolInput = T.Object({
  message: T.String({ minLength: 1, maxLength: 100_000 }),
  input: T.Optional(T.Record(T.String(), T.Unknown())),
})

/** RFC 9728 OAuth 2.0 Protected Resource Metadata, served at /.well-known/oauth-protected-resource. */
export const ProtectedResourceMetadata = T.Object(
  {
    resource: T.String(),
    authorization_servers: T.Array(T.String()),
    bearer_methods_supported: T.Array(T.String()),
    resource_name: T.String(),
    resource_documentation: T.Optional(T.String()),
  },
  { title: 'ProtectedResourceMetadata' },
)
