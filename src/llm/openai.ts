import {
  Accumulator,
  SseFramer,
  badResponse,
  drive,
  effectiveOptions,
  joinUrl,
  parseFrame,
  positiveNumber,
  postStream,
  type StreamProtocol,
  type TransportOptions,
} from './transport.ts'
import { LlmError, collect, type ChatEvent, type ChatMessage, type ChatRequest, type FinishReason, type LlmClient, type ProviderConfig, type ToolDefinition } from './types.ts'

/*
 * OpenAI Chat Completions (`POST {base}/chat/completions`, `stream: true`, usage via
 * `stream_options.include_usage`). Also serves any OpenAI-compatible endpoint (vLLM, LiteLLM,
 * llama.cpp server, proxies): base URL from api_endpoint, default https://api.openai.com/v1.
 * The wire pieces are exported for the Mistral client, whose protocol is the same with small
 * differences (see mistral.ts).
 */

export const OPENAI_DEFAULT_BASE = 'https://api.openai.com/v1'

export interface OpenAiWireToolCall {
  id: string
  type: 'function'
  function: { name: string; arguments: string }
}

export interface OpenAiWireMessage {
  role: 'system' | 'user' | 'assistant' | 'tool'
  content: string | null
  tool_calls?: OpenAiWireToolCall[]
  tool_call_id?: string
  name?: string
}

/** Neutral messages are OpenAI's shape already: copied field by field (nothing else reaches the wire). */
export function toOpenAiMessages(messages: readonly ChatMessage[], mapId: (id: string) => string = (id) => id): OpenAiWireMessage[] {
  const out: OpenAiWireMessage[] = []
  for (const m of messages) {
    const w: OpenAiWireMessage = { role: m.role, content: m.content }
    if (m.role === 'assistant' && m.tool_calls !== undefined && m.tool_calls.length > 0) {
      w.tool_calls = m.tool_calls.map((c) => ({ id: mapId(c.id), type: 'function', function: { name: c.function.name, arguments: c.function.arguments } }))
    }
    if (m.role === 'tool') {
      if (m.tool_call_id === undefined) throw new LlmError('llm.invalid_request', 'a tool message has no tool_call_id')
      w.tool_call_id = mapId(m.tool_call_id)
      if (w.content === null) w.content = ''
    }
    out.push(w)
  }
  return out
}

export const toOpenAiTools = (tools: readonly ToolDefinition[]) =>
  tools.map((t) => ({ type: 'function' as const, function: { name: t.name, description: t.description, parameters: t.parameters } }))

export const OPENAI_FINISH: Record<string, FinishReason> = { stop: 'stop', tool_calls: 'tool_calls', function_call: 'tool_calls', length: 'length', content_filter: 'content_filter' }

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0)

/** One Chat Completions stream: `chat.completion.chunk` frames, then `[DONE]`. */
export class OpenAiStream implements StreamProtocol {
  readonly acc = new Accumulator()
  finished = false
  private readonly finishMap: Record<string, FinishReason>
  constructor(finishMap: Record<string, FinishReason> = OPENAI_FINISH) {
    this.finishMap = finishMap
  }

  completeAtEof(): boolean {
    return this.acc.finishReason !== null
  }

  frame(_event: string, data: string, out: ChatEvent[]): void {
    if (data === '[DONE]') {
      this.finished = true
      return
    }
    const chunk = parseFrame(data)
    const error = chunk['error']
    if (error !== undefined) {
      const e = isRecord(error) ? error : { message: String(error) }
      const kind = `${String(e['type'] ?? '')} ${String(e['code'] ?? '')}`
      throw new LlmError('llm.stream_error', `the LLM provider reported an error: ${String(e['message'] ?? kind)}`, {
        retryable: /server_error|overloaded|rate_limit|timeout|unavailable/i.test(kind),
      })
    }
    const usage = chunk['usage']
    if (isRecord(usage)) {
      this.acc.promptTokens = num(usage['prompt_tokens'])
      this.acc.completionTokens = num(usage['completion_tokens'])
      if (typeof usage['total_tokens'] === 'number') this.acc.totalTokens = usage['total_tokens']
    }
    const choices = chunk['choices']
    if (!Array.isArray(choices)) {
      if (isRecord(usage)) return
      throw badResponse('a chat completion chunk has no choices')
    }
    const choice: unknown = choices[0]
    if (!isRecord(choice)) return
    const delta = choice['delta']
    if (isRecord(delta)) {
      const text = delta['content']
      if (typeof text === 'string' && text !== '') this.acc.text(text, out)
      const calls = delta['tool_calls']
      if (Array.isArray(calls)) {
        for (let i = 0; i < calls.length; i++) {
          const c: unknown = calls[i]
          if (!isRecord(c)) throw badResponse('a tool call delta is not an object')
          const fn = isRecord(c['function']) ? c['function'] : {}
          // Servers that send whole calls at once (Mistral) may leave out `index`.
          const index = typeof c['index'] === 'number' ? c['index'] : this.acc.toolCount
          this.acc.tool(
            index,
            typeof c['id'] === 'string' ? c['id'] : undefined,
            typeof fn['name'] === 'string' ? fn['name'] : undefined,
            typeof fn['arguments'] === 'string' ? fn['arguments'] : isRecord(fn['arguments']) ? JSON.stringify(fn['arguments']) : undefined,
            out,
          )
        }
      }
    }
    const finish = choice['finish_reason']
    if (typeof finish === 'string' && finish !== '') this.acc.finishReason = this.finishMap[finish] ?? finish
  }
}

export function openAiHeaders(provider: ProviderConfig): Record<string, string> {
  const headers: Record<string, string> = {}
  if (provider.api_key !== null && provider.api_key !== '') headers['authorization'] = `Bearer ${provider.api_key}`
  return headers
}

export interface OpenAiClient extends LlmClient {
  readonly providerType: 'openai'
  /** The chat completions URL the client posts to. */
  readonly url: string
}

export function createOpenAiClient(provider: ProviderConfig, clientOptions: TransportOptions = {}): OpenAiClient {
  const options = effectiveOptions(provider, clientOptions)
  const url = joinUrl(provider.api_endpoint ?? OPENAI_DEFAULT_BASE, '/chat/completions')
  const headers = openAiHeaders(provider)
  const org = provider.config['organization_id']
  if (typeof org === 'string' && org !== '') headers['openai-organization'] = org
  const maxTokensParam = provider.config['max_tokens_param'] === 'max_completion_tokens' ? 'max_completion_tokens' : 'max_tokens'
  const defaultMaxTokens = positiveNumber(provider.config['max_tokens'])

  async function* stream(req: ChatRequest): AsyncGenerator<ChatEvent, void, undefined> {
    const body: Record<string, unknown> = { model: req.model, messages: toOpenAiMessages(req.messages), stream: true, stream_options: { include_usage: true } }
    if (req.tools !== undefined && req.tools.length > 0) body['tools'] = toOpenAiTools(req.tools)
    if (req.temperature !== undefined) body['temperature'] = req.temperature
    const maxTokens = req.max_tokens ?? defaultMaxTokens
    if (maxTokens !== undefined) body[maxTokensParam] = maxTokens
    const res = await postStream(url, { headers, body: JSON.stringify(body), signal: req.signal, options })
    yield* drive(res, new SseFramer(), new OpenAiStream(), req.signal)
  }

  return { providerType: 'openai', url, stream, complete: (req) => collect(stream(req)) }
}
