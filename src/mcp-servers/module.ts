import { defineFeature } from '../feature/define.ts'
import { mcpServerPermissions } from './access.ts'
import { mcpServerTools } from './tools.ts'

/*
 * Remote MCP servers as agent tools (see README.md here). The kind (CRUD, config apply, package
 * export) is src/kinds/mcp-server/; this feature adds the client, the tool provider, the `use`
 * permission it checks and its error codes.
 */
export const mcpServersFeature = defineFeature({
  name: 'mcp-servers',
  routes: () => [],
  tools: [mcpServerTools],
  permissions: mcpServerPermissions.list,
  errorCodes: {
    'mcp_server.protocol_error': {
      status: 502,
      message: 'the MCP server answered something that is not MCP',
      public: true,
      surface: 'http',
    },
    'mcp_server.rpc_error': {
      status: 502,
      message: 'the MCP server answered a JSON-RPC error',
      public: true,
      surface: 'http',
    },
    'mcp_server.secret_unavailable': {
      status: 409,
      message: "the MCP server's secret is missing or its owner may not use it",
      public: true,
      surface: 'http',
    },
    'mcp_server.timeout': {
      status: 504,
      message: 'the MCP server did not answer in time',
      public: true,
      surface: 'http',
    },
  },
})
