import type { AnyKind } from '../resources/kind.ts'
import { agentKind } from './agent/kind.ts'
import { collectionKind } from './collection/kind.ts'
import { functionKind } from './function/kind.ts'
import { llmProviderKind } from './llm-provider/kind.ts'
import { skillKind } from './skill/kind.ts'
import { secretKind } from './secret/kind.ts'

/** Every registered resource kind. Adding a kind here gives it routes, docs, permissions and storage. */
export const KINDS: readonly AnyKind[] = [agentKind, functionKind, skillKind, llmProviderKind, secretKind, collectionKind]
