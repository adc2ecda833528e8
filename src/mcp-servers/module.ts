import { defineFeature } from '../feature/define.ts'
import { createSecretBox, previousKeys } from '../kernel/crypto.ts'
import { mcpServerPermissions } from './access.ts'
import { mcpServerHandlers } from './handlers.ts'
import { mcpServerRoutes } from './routes.ts'
import { createSessionCache } from './session.ts'
import { createToolListCache } from './tool-cache.ts'
import { mcpServerTools } from './tools.ts'

/*
 * Remote MCP servers as agent tools (see README.md here). The kind (CRUD, config apply, package
 * export) is src/kinds/mcp-server/; this feature adds the client, the tool provider, the `use`
 * permission it checks (its error codes, `mcp_server.*`, are in src/kernel/error-codes.ts), and
 * the routes of a user's OAuth connection to a server.
 */
export const mcpServersFeature = defineFeature({
  name: 'mcp-servers',
  routes: mcpServerRoutes,
  tools: [mcpServerTools],
  permissions: mcpServerPermissions.list,
  service: (ctx) => ({
    routes: mcpServerHandlers({
      db: ctx.db,
      config: ctx.config,
      resources: ctx.resources,
      box: createSecretBox(ctx.config.ENCRYPTION_KEY, previousKeys(ctx.config.ENCRYPTION_KEY_PREVIOUS)),
      log: ctx.log.child({ mod: 'mcp-servers' }),
      toolLists: createToolListCache(),
      sessions: createSessionCache(),
    }),
  }),
})
