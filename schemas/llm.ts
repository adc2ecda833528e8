import { Type as T, type Static } from '@sinclair/typebox'
import { MessageRole, ToolCall } from './chat.ts'
import { LlmProviderSpec, PROVIDER_TYPES } from './llm-provider.ts'

/*
 * The provider-neutral LLM shapes (src/llm/): messages have the chat message records' shape
 * (chat.ts: tool calls `{id, type: "function", function: {name, arguments: <JSON text>}}`), so a
 * turn hands stored history to any provider; each client maps it to its wire.
 */

export const ProviderType = T.Union(PROVIDER_TYPES.map((p) => T.Literal(p)))
export type ProviderType = Static<typeof ProviderType>

export const LlmMessage = T.Object({
  role: MessageRole,
  content: T.Union([T.String(), T.Null()]),
  /** assistant messages that called tools */
  tool_calls: T.Optional(T.Array(ToolCall)),
  /** tool messages: the call this message answers */
  tool_call_id: T.Optional(T.String()),
})
export type LlmMessage = Static<typeof LlmMessage>

export const ToolDefinition = T.Object({
  /** `[a-zA-Z0-9_-]{1,64}` (the common subset of the providers; the platform's tool names fit) */
  name: T.String(),
  description: T.String(),
  /** JSON Schema of the arguments object */
  parameters: T.Record(T.String(), T.Unknown()),
})
export type ToolDefinition = Static<typeof ToolDefinition>

export const Usage = T.Object({ prompt_tokens: T.Integer(), completion_tokens: T.Integer(), total_tokens: T.Integer() })
export type Usage = Static<typeof Usage>

const providerFields = LlmProviderSpec.properties

/** What a client is built from: the fields of an llm_provider resource, api_key decrypted. */
export const ProviderConfig = T.Object({
  provider_type: ProviderType,
  /** Base URL; null = the provider's public API (required for ollama). */
  api_endpoint: providerFields.api_endpoint,
  api_key: providerFields.api_key,
  default_model: providerFields.default_model,
  config: providerFields.config,
})
export type ProviderConfig = Static<typeof ProviderConfig>

/** A provider as resolution sees it: the resource without its secret. */
export const ProviderEntry = T.Object({
  id: T.String(),
  name: T.String(),
  provider_type: ProviderType,
  api_endpoint: providerFields.api_endpoint,
  default_model: providerFields.default_model,
  config: providerFields.config,
  is_default: T.Boolean(),
  is_active: T.Boolean(),
})
export type ProviderEntry = Static<typeof ProviderEntry>
