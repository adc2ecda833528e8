import {
  Accumulator,
  NdjsonFramer,
  badResponse,
  syntheticCallId,
  drive,
  effectiveOptions,
  joinUrl,
  parseFrame,
  positiveNumber,
  postStream,
  type StreamProtocol,
  type TransportOptions,
} from './transport.ts'
import {
  LlmError,
  argumentsObject,
  collect,
  type ChatEvent,
  type ChatRequest,
  type FinishReason,
  type LlmClient,
  type ProviderConfig,
  type ToolDefinition,
} from './types.ts'

/*
 * Ollama (`POST {api_endpoint}/api/chat`, `stream: true`, newline-delimited JSON). api_endpoint is
 * required (the kind validates it), e.g. http://127.0.0.1:11434.
 *  - tool call arguments are objects on Ollama's wire: parsed from / stringified to the neutral
 *    JSON strings; calls arrive whole (one delta per call) and without ids, so ids are minted;
 *  - tool messages carry `tool_name` (looked up from the assistant's calls);
 *  - temperature and max_tokens go into `options` (`num_predict`), merged over config.options;
 *  - usage: `prompt_eval_count` / `eval_count` of the final `done: true` line;
 *  - a `{"error": …}` line becomes `llm.stream_error`;
 *  - response_format → `format` (a json_schema's schema, or `"json"` for json_object).
 */

export interface OllamaMessage {
  role: 'system' | 'user' | 'assistant' | 'tool'
  content: string
  tool_calls?: { function: { name: string; arguments: Record<string, unknown> } }[]
  tool_name?: string
}

export function toOllamaMessages(req: ChatRequest): OllamaMessage[] {
  const names = new Map<string, string>()
  const out: OllamaMessage[] = []
  for (const m of req.messages) {
    const w: OllamaMessage = { role: m.role, content: m.content ?? '' }
    if (m.role === 'assistant' && m.tool_calls !== undefined && m.tool_calls.length > 0) {
      w.tool_calls = m.tool_calls.map((c) => {
        names.set(c.id, c.function.name)
        return { function: { name: c.function.name, arguments: argumentsObject(c.function.arguments) } }
      })
    }
    if (m.role === 'tool') {
      if (m.tool_call_id === undefined) throw new LlmError('llm.invalid_request', 'a tool message has no tool_call_id')
      const name = names.get(m.tool_call_id)
      if (name !== undefined) w.tool_name = name
    }
    out.push(w)
  }
  return out
}

export const toOllamaTools = (tools: readonly ToolDefinition[]) =>
  tools.map((t) => ({
    type: 'function' as const,
    function: { name: t.name, description: t.description, parameters: t.parameters },
  }))

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0)
const FINISH: Record<string, FinishReason> = { stop: 'stop', length: 'length' }

export class OllamaStream implements StreamProtocol {
  readonly acc = new Accumulator()
  finished = false

  completeAtEof(): boolean {
    return false
  }

  frame(_event: string, data: string, out: ChatEvent[]): void {
    const f = parseFrame(data)
    if (f['error'] !== undefined) {
      const message = typeof f['error'] === 'string' ? f['error'] : JSON.stringify(f['error'])
      throw new LlmError('llm.stream_error', `the LLM provider reported an error: ${message}`)
    }
    const message = f['message']
    if (isRecord(message)) {
      const text = message['content']
      if (typeof text === 'string' && text !== '') this.acc.text(text, out)
      const calls = message['tool_calls']
      if (Array.isArray(calls)) {
        for (const c of calls as unknown[]) {
          const fn = isRecord(c) ? c['function'] : undefined
          if (!isRecord(fn) || typeof fn['name'] !== 'string') throw badResponse('a tool call without a function name')
          const args = fn['arguments']
          const json = typeof args === 'string' ? args : isRecord(args) ? JSON.stringify(args) : '{}'
          // Calls arrive whole and (mostly) without ids: one is minted now, so the delta and `done` agree.
          const id = isRecord(c) && typeof c['id'] === 'string' && c['id'] !== '' ? c['id'] : syntheticCallId()
          this.acc.tool(this.acc.toolCount, id, fn['name'], json, out)
        }
      }
    } else if (f['done'] !== true) throw badResponse('an Ollama line without a message')
    if (f['done'] === true) {
      const reason = f['done_reason']
      this.acc.finishReason = typeof reason === 'string' && reason !== '' ? (FINISH[reason] ?? reason) : 'stop'
      this.acc.promptTokens = num(f['prompt_eval_count'])
      this.acc.completionTokens = num(f['eval_count'])
      this.finished = true
    }
  }
}

export interface OllamaClient extends LlmClient {
  readonly providerType: 'ollama'
  readonly url: string
}

/** OpenAI's response_format as Ollama's `format`: a JSON Schema itself, or `"json"` for any JSON. */
export function ollamaFormat(rf: ChatRequest['response_format']): Record<string, unknown> | 'json' | undefined {
  if (rf === undefined) return undefined
  if (rf.type === 'json_schema' && rf.json_schema?.schema !== undefined) return rf.json_schema.schema
  if (rf.type === 'json_object' || rf.type === 'json_schema') return 'json'
  return undefined
}

export function createOllamaClient(provider: ProviderConfig, clientOptions: TransportOptions = {}): OllamaClient {
  if (provider.api_endpoint === null || provider.api_endpoint === '')
    throw new LlmError('llm.endpoint_refused', 'an ollama provider needs api_endpoint')
  const options = effectiveOptions(provider, clientOptions)
  const url = joinUrl(provider.api_endpoint, '/api/chat')
  const headers: Record<string, string> = {}
  // Ollama itself has no keys; a key is sent for authenticating proxies in front of it.
  if (provider.api_key !== null && provider.api_key !== '') headers['authorization'] = `Bearer ${provider.api_key}`
  const baseOptions = isRecord(provider.config['options']) ? provider.config['options'] : {}
  const keepAlive = provider.config['keep_alive']
  const defaultMaxTokens = positiveNumber(provider.config['max_tokens'])

  async function* stream(req: ChatRequest): AsyncGenerator<ChatEvent, void, undefined> {
    const body: Record<string, unknown> = { model: req.model, messages: toOllamaMessages(req), stream: true }
    if (req.tools !== undefined && req.tools.length > 0) body['tools'] = toOllamaTools(req.tools)
    const opts: Record<string, unknown> = { ...baseOptions }
    if (req.temperature !== undefined) opts['temperature'] = req.temperature
    const maxTokens = req.max_tokens ?? defaultMaxTokens
    if (maxTokens !== undefined) opts['num_predict'] = maxTokens
    if (Object.keys(opts).length > 0) body['options'] = opts
    if (typeof keepAlive === 'string' || typeof keepAlive === 'number') body['keep_alive'] = keepAlive
    const format = ollamaFormat(req.response_format)
    if (format !== undefined) body['format'] = format
    const res = await postStream(url, { headers, body: JSON.stringify(body), signal: req.signal, options })
    yield* drive(res, new NdjsonFramer(), new OllamaStream(), req.signal)
  }

  return { providerType: 'ollama', url, stream, complete: (req) => collect(stream(req)) }
}
