import { LlmProviderSpec } from '../../../schemas/llm-provider.ts'
import { defineKind } from '../../resources/kind.ts'

export const llmProviderKind = defineKind({
  kind: 'llm_provider',
  plural: 'llm-providers',
  title: 'LlmProvider',
  description: 'Connections to LLM APIs (admin only; api_key encrypted at rest and never returned).',
  spec: LlmProviderSpec,
  addressing: 'named',
  updateMethod: 'PATCH',
  adminOnly: true,
  secrets: ['api_key'],
  exclusiveFlags: ['is_default'],
  validate: (s) =>
    s.provider_type === 'ollama' && s.api_endpoint === null
      ? [{ path: 'api_endpoint', message: 'required for ollama' }]
      : [],
})
