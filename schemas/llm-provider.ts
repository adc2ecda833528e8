import { Type as T } from '@sinclair/typebox'

/* LLM provider fields. `api_key` is write-only: encrypted at rest, never returned. */
export const PROVIDER_TYPES = ['openai', 'anthropic', 'mistral', 'ollama'] as const

export const LlmProviderSpec = T.Object(
  {
    provider_type: T.Union(
      PROVIDER_TYPES.map((p) => T.Literal(p)),
      {
        description:
          'openai (also any OpenAI-compatible endpoint), anthropic, mistral, or ollama (local runner; api_endpoint required)',
      },
    ),
    api_key: T.Union([T.String({ maxLength: 4096 }), T.Null()], { default: null, description: 'write-only' }),
    api_endpoint: T.Union([T.String({ format: 'uri', maxLength: 2048 }), T.Null()], { default: null }),
    default_model: T.Union([T.String({ minLength: 1, maxLength: 200 }), T.Null()], { default: null }),
    config: T.Record(T.String(), T.Unknown(), {
      default: {},
      description: 'extra settings, e.g. max_tokens, organization_id',
    }),
    is_default: T.Boolean({ default: false, description: 'the system-wide default provider (only one)' }),
  },
  { additionalProperties: false },
)
