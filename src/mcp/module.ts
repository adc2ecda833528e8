import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { defineFeature } from '../feature/define.ts'
import { mcpHandlers } from './handlers.ts'
import { metadataHandlers } from './metadata.ts'
import { mcpRoutes } from './routes.ts'

/* The Model Context Protocol server at /mcp: the caller's functions, queries and agents as tools (docs/mcp.md). */
export const mcpFeature = defineFeature({
  name: 'mcp',
  routes: mcpRoutes,
  service: (ctx) => {
    const { version } = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')) as {
      version: string
    }
    return {
      routes: [
        ...mcpHandlers({
          nc: ctx.nc,
          js: ctx.js,
          names: ctx.names,
          resources: ctx.resources,
          config: ctx.config,
          version,
          log: ctx.log.child({ mod: 'mcp' }),
          intervalMs: ctx.config.MCP_PROGRESS_SECONDS * 1000,
          // a function's longest run and the sync wait's margin (src/functions/invoke.ts): the
          // route answers first; a call without a stream is bounded sooner by the gateway's RPC timeout
          timeoutMs: ctx.config.FUNCTION_TIMEOUT * 1000 + 60_000,
        }),
        ...metadataHandlers(ctx.config),
      ],
    }
  },
})
