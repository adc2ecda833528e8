import { defineFeature } from '../feature/define.ts'
import { mcpServerPermissions } from './access.ts'
import { mcpServerTools } from './tools.ts'

/*
 * Remote MCP servers as agent tools (see README.md here). The kind (CRUD, config apply, package
 * export) is src/kinds/mcp-server/; this feature adds the client, the tool provider, the `use`
 * permission it checks (its error codes, `mcp_server.*`, are in src/kernel/error-codes.ts).
 */
export const mcpServersFeature = defineFeature({
  name: 'mcp-servers',
  routes: () => [],
  tools: [mcpServerTools],
  permissions: mcpServerPermissions.list,
})
