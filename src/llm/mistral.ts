import { createHash } from 'node:crypto'
import {
  OPENAI_FINISH,
  OpenAiChunks,
  openAiHeaders,
  openAiWireStream,
  toOpenAiMessages,
  toOpenAiTools,
} from './openai.ts'
import { effectiveOptions, joinUrl, positiveNumber, type TransportOptions } from './transport.ts'
import {
  collect,
  type ChatEvent,
  type ChatRequest,
  type FinishReason,
  type LlmClient,
  type ProviderConfig,
} from './types.ts'

/*
 * Mistral La Plateforme (`POST {base}/chat/completions`, default https://api.mistral.ai/v1). The
 * wire is OpenAI's: its request, stream reader, chunk mapping and message mapping are reused
 * (openai.ts). Differences handled here:
 *  - no `stream_options` (Mistral rejects unknown fields; it reports usage in the last chunk anyway);
 *  - tool call ids must match `[a-zA-Z0-9]{9}`: ids minted by other providers (history of a chat
 *    whose agent switched provider) are mapped to a stable 9-character digest, on the assistant's
 *    calls and on the tool messages alike;
 *  - tool messages carry the function `name`, assistant messages that call tools `content: ""`;
 *  - finish reason `model_length` means `length`.
 */

export const MISTRAL_DEFAULT_BASE = 'https://api.mistral.ai/v1'

const MISTRAL_FINISH: Record<string, FinishReason> = { ...OPENAI_FINISH, model_length: 'length' }

const MISTRAL_ID = /^[a-zA-Z0-9]{9}$/

/** A tool call id Mistral accepts: kept when it already is one, else a stable digest of it. */
export const mistralToolCallId = (id: string): string =>
  MISTRAL_ID.test(id) ? id : createHash('sha256').update(id).digest('hex').slice(0, 9)

export function toMistralMessages(req: ChatRequest) {
  const messages = toOpenAiMessages(req.messages, mistralToolCallId)
  const names = new Map<string, string>()
  for (const m of messages) {
    if (m.tool_calls !== undefined) {
      for (const c of m.tool_calls) names.set(c.id, c.function.name)
      if (m.content === null) m.content = ''
    } else if (m.role === 'tool' && m.tool_call_id !== undefined) {
      const name = names.get(m.tool_call_id)
      if (name !== undefined) m.name = name
    }
  }
  return messages
}

export interface MistralClient extends LlmClient {
  readonly providerType: 'mistral'
  readonly url: string
}

export function createMistralClient(provider: ProviderConfig, clientOptions: TransportOptions = {}): MistralClient {
  const options = effectiveOptions(provider, clientOptions)
  const baseURL = (provider.api_endpoint ?? MISTRAL_DEFAULT_BASE).replace(/\/+$/, '')
  const url = joinUrl(baseURL, '/chat/completions')
  // organization_id is an OpenAI setting: Mistral gets no OpenAI-Organization header.
  const headers = openAiHeaders(provider.api_key, null)
  const defaultMaxTokens = positiveNumber(provider.config['max_tokens'])

  async function* stream(req: ChatRequest): AsyncGenerator<ChatEvent, void, undefined> {
    const body: Record<string, unknown> = { model: req.model, messages: toMistralMessages(req), stream: true }
    if (req.tools !== undefined && req.tools.length > 0) body['tools'] = toOpenAiTools(req.tools)
    if (req.temperature !== undefined) body['temperature'] = req.temperature
    const maxTokens = req.max_tokens ?? defaultMaxTokens
    if (maxTokens !== undefined) body['max_tokens'] = maxTokens
    // Mistral takes OpenAI's response_format (json_object, json_schema) as it is
    if (req.response_format !== undefined) body['response_format'] = req.response_format
    yield* openAiWireStream(url, headers, body, req.signal, options, new OpenAiChunks(MISTRAL_FINISH))
  }

  return { providerType: 'mistral', url, stream, complete: (req) => collect(stream(req)) }
}
