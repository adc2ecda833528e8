import { defineFeature } from '../feature/define.ts'
import { createSecretBox, previousKeys } from '../kernel/crypto.ts'
import { connectorKind } from '../kinds/connector/kind.ts'
import { operationCapCheck } from './operation-cap.ts'
import type { ConnectorRecord } from './deps.ts'
import { connectorHandlers, connectorPermissions } from './handlers.ts'
import { revokeConnectorTokens } from './oauth.ts'
import { connectorRoutes } from './routes.ts'
import { connectorTools } from './tools.ts'

/* Connectors: OpenAPI import, operation calls, OAuth 2, and their agent tools (see README.md here). */
export const connectorsFeature = defineFeature({
  name: 'connectors',
  routes: connectorRoutes,
  tools: [connectorTools],
  permissions: connectorPermissions.list,
  specChecks: ({ config }) => [operationCapCheck(config.CONNECTOR_MAX_OPERATIONS)],
  service: (ctx) => {
    const box = createSecretBox(ctx.config.ENCRYPTION_KEY, previousKeys(ctx.config.ENCRYPTION_KEY_PREVIOUS))
    const deps = {
      db: ctx.db,
      config: ctx.config,
      resources: ctx.resources,
      box,
      log: ctx.log.child({ mod: 'connectors' }),
    }
    // a deleted connector's OAuth tokens are revoked at the provider, not just cascaded away
    ctx.resources.beforeRemove(connectorKind, async (record) => {
      await revokeConnectorTokens(deps, {
        ...record,
        namespace: record.namespace ?? '',
        owner_id: record.owner_id ?? null,
      } as ConnectorRecord)
    })
    return { routes: connectorHandlers(deps) }
  },
})
