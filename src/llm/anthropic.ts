import {
  Accumulator,
  SseFramer,
  badResponse,
  drive,
  effectiveOptions,
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
 * Anthropic Messages API (`POST {base}/v1/messages`, `stream: true`, headers `x-api-key` and
 * `anthropic-version: 2023-06-01`; base default https://api.anthropic.com, a base ending in `/v1`
 * is accepted too).
 *
 * Mapping from the neutral shape:
 *  - system messages → the top-level `system` string (joined by a blank line, in order);
 *  - assistant tool calls → `tool_use` blocks (`input` is the parsed arguments object);
 *  - tool messages → `tool_result` blocks in a user turn; consecutive messages of the same role
 *    (parallel tool results, a user message right after them) merge into one turn, as the API
 *    wants alternating roles;
 *  - empty text is left out (the API refuses empty text blocks);
 *  - temperature is clamped to Anthropic's 0–1; max_tokens is required: request, else
 *    config.max_tokens, else 4096;
 *  - response_format: the Messages API has no such parameter; a json_schema (or json_object) is
 *    asked for by an instruction appended to `system` (the caller validates the answer: an agent's
 *    output_schema is checked by the turn, src/chats/output-schema.ts).
 * Stream: message_start (input usage) → content_block_start/delta/stop (text_delta,
 * input_json_delta; thinking blocks are skipped) → message_delta (stop_reason, output usage) →
 * message_stop. `ping` is ignored, `error` becomes `llm.stream_error`.
 */

export const ANTHROPIC_DEFAULT_BASE = 'https://api.anthropic.com'
export const ANTHROPIC_VERSION = '2023-06-01'
const DEFAULT_MAX_TOKENS = 4096

export type AnthropicBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'tool_result'; tool_use_id: string; content: string }

export interface AnthropicMessage {
  role: 'user' | 'assistant'
  content: string | AnthropicBlock[]
}

/** Tool ids must match `[a-zA-Z0-9_-]+`. */
const anthropicId = (id: string) => (/^[a-zA-Z0-9_-]+$/.test(id) ? id : id.replace(/[^a-zA-Z0-9_-]/g, '_') || 'call')

export function toAnthropicRequest(req: ChatRequest): { system: string | undefined; messages: AnthropicMessage[] } {
  const system: string[] = []
  const turns: { role: 'user' | 'assistant'; blocks: AnthropicBlock[] }[] = []
  const push = (role: 'user' | 'assistant', blocks: AnthropicBlock[]) => {
    if (blocks.length === 0) return
    const last = turns[turns.length - 1]
    if (last !== undefined && last.role === role) last.blocks.push(...blocks)
    else turns.push({ role, blocks })
  }
  for (const m of req.messages) {
    switch (m.role) {
      case 'system':
        if (m.content !== null && m.content !== '') system.push(m.content)
        break
      case 'user':
        push('user', m.content === null || m.content === '' ? [] : [{ type: 'text', text: m.content }])
        break
      case 'assistant': {
        const blocks: AnthropicBlock[] =
          m.content === null || m.content === '' ? [] : [{ type: 'text', text: m.content }]
        for (const c of m.tool_calls ?? [])
          blocks.push({
            type: 'tool_use',
            id: anthropicId(c.id),
            name: c.function.name,
            input: argumentsObject(c.function.arguments),
          })
        push('assistant', blocks)
        break
      }
      case 'tool':
        if (m.tool_call_id === undefined)
          throw new LlmError('llm.invalid_request', 'a tool message has no tool_call_id')
        push('user', [{ type: 'tool_result', tool_use_id: anthropicId(m.tool_call_id), content: m.content ?? '' }])
        break
    }
  }
  const messages = turns.map(({ role, blocks }): AnthropicMessage => {
    const only = blocks[0]
    return blocks.length === 1 && only !== undefined && only.type === 'text'
      ? { role, content: only.text }
      : { role, content: blocks }
  })
  return { system: system.length === 0 ? undefined : system.join('\n\n'), messages }
}

export const toAnthropicTools = (tools: readonly ToolDefinition[]) =>
  tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters }))

const FINISH: Record<string, FinishReason> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  tool_use: 'tool_calls',
  max_tokens: 'length',
  refusal: 'content_filter',
}
const RETRYABLE_STREAM_ERRORS = new Set(['overloaded_error', 'api_error', 'rate_limit_error', 'timeout_error'])

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0)

export class AnthropicStream implements StreamProtocol {
  readonly acc = new Accumulator()
  finished = false
  private started = false
  /** content block index → tool call index (text and thinking blocks have none) */
  private readonly toolOfBlock: number[] = []

  completeAtEof(): boolean {
    return false
  }

  frame(_event: string, data: string, out: ChatEvent[]): void {
    const f = parseFrame(data)
    switch (f['type']) {
      case 'content_block_delta': {
        const delta = f['delta']
        if (!isRecord(delta)) throw badResponse('content_block_delta without a delta')
        if (delta['type'] === 'text_delta') {
          if (typeof delta['text'] !== 'string') throw badResponse('text_delta without text')
          if (delta['text'] !== '') this.acc.text(delta['text'], out)
        } else if (delta['type'] === 'input_json_delta') {
          const tool = this.toolOfBlock[num(f['index'])]
          if (tool === undefined || tool < 0) throw badResponse('input_json_delta for a block that is not a tool_use')
          if (typeof delta['partial_json'] !== 'string') throw badResponse('input_json_delta without partial_json')
          if (delta['partial_json'] !== '') this.acc.tool(tool, undefined, undefined, delta['partial_json'], out)
        }
        return
      }
      case 'message_start': {
        const message = f['message']
        const usage = isRecord(message) ? message['usage'] : undefined
        if (isRecord(usage)) {
          this.acc.promptTokens =
            num(usage['input_tokens']) +
            num(usage['cache_creation_input_tokens']) +
            num(usage['cache_read_input_tokens'])
          this.acc.completionTokens = num(usage['output_tokens'])
          this.acc.reportCost(usage['cost'])
        }
        this.started = true
        return
      }
      case 'content_block_start': {
        if (!this.started) throw badResponse('content_block_start before message_start')
        const block = f['content_block']
        const index = num(f['index'])
        if (!isRecord(block)) throw badResponse('content_block_start without a content_block')
        if (block['type'] === 'tool_use') {
          const tool = this.acc.toolCount
          while (this.toolOfBlock.length < index) this.toolOfBlock.push(-1)
          this.toolOfBlock[index] = tool
          const input = block['input']
          const initial = isRecord(input) && Object.keys(input).length > 0 ? JSON.stringify(input) : undefined
          this.acc.tool(
            tool,
            typeof block['id'] === 'string' ? block['id'] : undefined,
            typeof block['name'] === 'string' ? block['name'] : undefined,
            initial,
            out,
          )
        } else if (block['type'] === 'text' && typeof block['text'] === 'string' && block['text'] !== '') {
          this.acc.text(block['text'], out)
        }
        return
      }
      case 'message_delta': {
        const delta = f['delta']
        if (isRecord(delta) && typeof delta['stop_reason'] === 'string')
          this.acc.finishReason = FINISH[delta['stop_reason']] ?? delta['stop_reason']
        const usage = f['usage']
        if (isRecord(usage)) {
          // output_tokens is cumulative; input_tokens appears here on newer API versions
          if (typeof usage['output_tokens'] === 'number') this.acc.completionTokens = usage['output_tokens']
          if (typeof usage['input_tokens'] === 'number') {
            this.acc.promptTokens =
              usage['input_tokens'] + num(usage['cache_creation_input_tokens']) + num(usage['cache_read_input_tokens'])
          }
          // Anthropic's API reports no cost; a gateway in front of it may (cumulative, like the tokens)
          this.acc.reportCost(usage['cost'])
        }
        return
      }
      case 'message_stop':
        if (!this.started) throw badResponse('message_stop before message_start')
        this.finished = true
        return
      case 'error': {
        const e = isRecord(f['error']) ? f['error'] : {}
        const type = String(e['type'] ?? 'error')
        throw new LlmError('llm.stream_error', `the LLM provider reported ${type}: ${String(e['message'] ?? '')}`, {
          retryable: RETRYABLE_STREAM_ERRORS.has(type),
        })
      }
      case 'ping':
      case 'content_block_stop':
        return
      default:
        if (typeof f['type'] !== 'string') throw badResponse('a stream event without a type')
      // unknown event types are ignored (the API may add new ones)
    }
  }
}

/** The instruction standing in for response_format (Anthropic has no structured-output parameter). */
export function formatInstruction(rf: ChatRequest['response_format']): string | undefined {
  if (rf === undefined) return undefined
  if (rf.type === 'json_schema' && rf.json_schema?.schema !== undefined) {
    return `Answer with one JSON value only (no other text, no code fence) that matches this JSON Schema:\n${JSON.stringify(rf.json_schema.schema)}`
  }
  if (rf.type === 'json_object' || rf.type === 'json_schema')
    return 'Answer with one JSON object only (no other text, no code fence).'
  return undefined
}

export interface AnthropicClient extends LlmClient {
  readonly providerType: 'anthropic'
  readonly url: string
}

export function createAnthropicClient(provider: ProviderConfig, clientOptions: TransportOptions = {}): AnthropicClient {
  const options = effectiveOptions(provider, clientOptions)
  const base = (provider.api_endpoint ?? ANTHROPIC_DEFAULT_BASE).replace(/\/+$/, '').replace(/\/v1$/, '')
  const url = `${base}/v1/messages`
  const headers: Record<string, string> = { 'anthropic-version': ANTHROPIC_VERSION }
  if (provider.api_key !== null && provider.api_key !== '') headers['x-api-key'] = provider.api_key
  const defaultMaxTokens = positiveNumber(provider.config['max_tokens']) ?? DEFAULT_MAX_TOKENS

  async function* stream(req: ChatRequest): AsyncGenerator<ChatEvent, void, undefined> {
    const { system: given, messages } = toAnthropicRequest(req)
    const format = formatInstruction(req.response_format)
    const system = format === undefined ? given : given === undefined ? format : `${given}\n\n${format}`
    const body: Record<string, unknown> = { model: req.model, max_tokens: req.max_tokens ?? defaultMaxTokens }
    if (system !== undefined) body['system'] = system
    body['messages'] = messages
    if (req.tools !== undefined && req.tools.length > 0) body['tools'] = toAnthropicTools(req.tools)
    if (req.temperature !== undefined) body['temperature'] = Math.min(1, Math.max(0, req.temperature))
    body['stream'] = true
    const res = await postStream(url, { headers, body: JSON.stringify(body), signal: req.signal, options })
    yield* drive(res, new SseFramer(), new AnthropicStream(), req.signal)
  }

  return { providerType: 'anthropic', url, stream, complete: (req) => collect(stream(req)) }
}
