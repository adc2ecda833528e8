import type { AnyKind } from '../resources/kind.ts'
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

/** Every registered resource kind, one per line. Adding a kind here gives it routes, docs, permissions and storage. */
export const KINDS: readonly AnyKind[] = [
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
]
