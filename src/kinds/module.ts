import { defineFeature } from '../feature/define.ts'
import { agentKind } from './agent/kind.ts'
import { functionKind } from './function/kind.ts'
import { llmProviderKind } from './llm-provider/kind.ts'
import { manifestKind } from './manifest/kind.ts'
import { secretKind } from './secret/kind.ts'
import { skillKind } from './skill/kind.ts'
import { storeKind } from './store/kind.ts'
import { templateKind } from './template/kind.ts'
import { connectorKind } from './connector/kind.ts'
import { componentKind } from './component/kind.ts'
import { databaseConnectionKind } from './database-connection/kind.ts'
import { queryKind } from './query/kind.ts'
import { collectionKind } from './collection/kind.ts'
import { mcpServerKind } from './mcp-server/kind.ts'

/*
 * The resource kinds, one per line: their descriptions are shared by many features (an agent is
 * read by chats, components, the adapter and schedules) and by the gateway, so they live together
 * here and this feature contributes them. Adding a kind here gives it routes, documents,
 * permissions and storage from the resource engine (the resources feature).
 */
export const kindsFeature = defineFeature({
  name: 'kinds',
  routes: () => [],
  kinds: [
    agentKind,
    functionKind,
    skillKind,
    llmProviderKind,
    secretKind,
    storeKind,
    templateKind,
    manifestKind,
    connectorKind,
    componentKind,
    databaseConnectionKind,
    queryKind,
    collectionKind,
    mcpServerKind,
  ],
})
