import { defineFeature } from '../feature/define.ts'
import { createSecretBox, previousKeys } from '../kernel/crypto.ts'
import { mcpServerKind } from '../kinds/mcp-server/kind.ts'
import { mcpServerPermissions } from './access.ts'
import type { McpServerRecord } from './deps.ts'
import { mcpServerHandlers } from './handlers.ts'
import { revokeMcpServerTokens } from './oauth.ts'
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
  service: (ctx) => {
    const deps = {
      db: ctx.db,
      config: ctx.config,
      resources: ctx.resources,
      box: createSecretBox(ctx.config.ENCRYPTION_KEY, previousKeys(ctx.config.ENCRYPTION_KEY_PREVIOUS)),
      log: ctx.log.child({ mod: 'mcp-servers' }),
      toolLists: createToolListCache(),
      sessions: createSessionCache(),
    }
    // a deleted server's OAuth tokens are revoked at its authorization server, not just cascaded away
    ctx.resources.beforeRemove(mcpServerKind, async (record) => {
      await revokeMcpServerTokens(deps, {
        ...record,
        namespace: record.namespace ?? '',
        owner_id: record.owner_id ?? null,
      } as McpServerRecord)
    })
    return { routes: mcpServerHandlers(deps) }
  },
})
