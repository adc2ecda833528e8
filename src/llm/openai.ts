import type { OpenAiOutboundMessage } from '../../schemas/openai-wire.ts'
import {
  Accumulator,
  badResponse,
  drive,
  effectiveOptions,
  joinUrl,
  parseFrame,
  positiveNumber,
  postStream,
  readBodyText,
  SseFramer,
  toLlmError,
  type StreamProtocol,
  type TransportOptions,
} from './transport.ts'
import {
  LlmError,
  type ChatEvent,
  type ChatResult,
  type ChatMessage,
  type ChatRequest,
  type FinishReason,
  type LlmClient,
  type ProviderConfig,
  type ToolDefinition,
} from './types.ts'

/*
 * OpenAI Chat Completions (`POST {base}/chat/completions`, `stream: true`, usage via
 * `stream_options.include_usage`). Also serves any OpenAI-compatible endpoint (vLLM, LiteLLM,
 * llama.cpp server, proxies): base URL from api_endpoint, default https://api.openai.com/v1.
 * Hand-written over the guarded transport like the other clients (`postStream`, `drive`): a
 * stream is SSE read by `OpenAiStream`, a call without streaming one JSON answer. Through the
 * `openai` SDK (with the guarded client as its fetch) the same exchange cost up to about 1 ms more
 * per call on stop 31's slow 2-vCPU VM (bench/findings-log.md): its request chain of promise wrappers,
 * AbortController, response and stream classes, for a wire this small. The wire pieces are
 * exported for the Mistral client, whose protocol is the same with small differences (mistral.ts).
 */

export const OPENAI_DEFAULT_BASE = 'https://api.openai.com/v1'

export type { OpenAiOutboundMessage as OpenAiWireMessage }

/** Neutral messages are OpenAI's shape already: copied field by field (nothing else reaches the wire). */
export function toOpenAiMessages(
  messages: readonly ChatMessage[],
  mapId: (id: string) => string = (id) => id,
): OpenAiOutboundMessage[] {
  const out: OpenAiOutboundMessage[] = []
  for (const m of messages) {
    const w: OpenAiOutboundMessage = { role: m.role, content: m.content }
    if (m.role === 'assistant' && m.tool_calls !== undefined && m.tool_calls.length > 0) {
      w.tool_calls = m.tool_calls.map((c) => ({
        id: mapId(c.id),
        type: 'function',
        function: { name: c.function.name, arguments: c.function.arguments },
      }))
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
  tools.map((t) => ({
    type: 'function' as const,
    function: { name: t.name, description: t.description, parameters: t.parameters },
  }))

export const OPENAI_FINISH: Record<string, FinishReason> = {
  stop: 'stop',
  tool_calls: 'tool_calls',
  function_call: 'tool_calls',
  length: 'length',
  content_filter: 'content_filter',
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0)

/**
 * One Chat Completions stream: the `chat.completion.chunk` objects turned into neutral events. A
 * stream is complete once a finish reason was seen (`[DONE]` is the wire's end; OpenAiStream).
 */
export class OpenAiChunks {
  readonly acc = new Accumulator()
  private readonly finishMap: Record<string, FinishReason>
  constructor(finishMap: Record<string, FinishReason> = OPENAI_FINISH) {
    this.finishMap = finishMap
  }

  get complete(): boolean {
    return this.acc.finishReason !== null
  }

  chunk(chunk: Record<string, unknown>, out: ChatEvent[]): void {
    const usage = chunk['usage']
    if (isRecord(usage)) {
      this.acc.promptTokens = num(usage['prompt_tokens'])
      this.acc.completionTokens = num(usage['completion_tokens'])
      if (typeof usage['total_tokens'] === 'number') this.acc.totalTokens = usage['total_tokens']
      // OpenAI itself reports no cost; OpenAI-compatible gateways (OpenRouter, LiteLLM) put theirs here
      this.acc.reportCost(usage['cost'])
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
            typeof fn['arguments'] === 'string'
              ? fn['arguments']
              : isRecord(fn['arguments'])
                ? JSON.stringify(fn['arguments'])
                : undefined,
            out,
          )
        }
      }
    }
    const finish = choice['finish_reason']
    if (typeof finish === 'string' && finish !== '') this.acc.finishReason = this.finishMap[finish] ?? finish
  }
}

/** An error frame inside a 200 stream (`data: {"error": {…}}`). */
function streamError(error: unknown): LlmError {
  const e = isRecord(error) ? error : { message: String(error) }
  const kind = `${String(e['type'] ?? '')} ${String(e['code'] ?? '')}`
  return new LlmError('llm.stream_error', `the LLM provider reported an error: ${String(e['message'] ?? kind)}`, {
    retryable: /server_error|overloaded|rate_limit|timeout|unavailable/i.test(kind),
  })
}

/**
 * The OpenAI SSE wire as a `StreamProtocol` for `drive` (the hand-written clients' reader):
 * `data: {chunk}` frames until `data: [DONE]`, the event name not looked at (as the official SDK
 * reads them); a frame with an `error` member ends the stream with that error. A stream that ends
 * without `[DONE]` is complete once a finish reason was seen; `[DONE]` before one is not a complete
 * reply.
 */
export class OpenAiStream implements StreamProtocol {
  finished = false
  readonly chunks: OpenAiChunks
  constructor(chunks: OpenAiChunks = new OpenAiChunks()) {
    this.chunks = chunks
  }

  get acc(): Accumulator {
    return this.chunks.acc
  }

  completeAtEof(): boolean {
    return this.chunks.complete
  }

  frame(_event: string, data: string, out: ChatEvent[]): void {
    if (data.startsWith('[DONE]')) {
      if (!this.chunks.complete) throw badResponse('the LLM stream ended before the reply was complete')
      this.finished = true
      return
    }
    const f = parseFrame(data)
    if (f['error'] !== undefined && f['error'] !== null) throw streamError(f['error'])
    this.chunks.chunk(f, out)
  }
}

/**
 * The headers of an OpenAI-wire request beyond what `postStream` sends (a JSON body, the user
 * agent): a JSON answer asked for, the key as a bearer token when the provider has one (a local
 * server may have none), the organization when set.
 */
export function openAiHeaders(apiKey: string | null, organization: string | null): Record<string, string> {
  const sent: Record<string, string> = { accept: 'application/json' }
  if (apiKey !== null && apiKey !== '') sent['authorization'] = `Bearer ${apiKey}`
  if (organization !== null) sent['openai-organization'] = organization
  return sent
}

/** One streamed call on the OpenAI wire (OpenAI, Mistral): the body as that provider's wire wants it. */
export async function* openAiWireStream(
  url: string,
  headers: Record<string, string>,
  body: Record<string, unknown>,
  signal: AbortSignal | undefined,
  options: TransportOptions,
  chunks: OpenAiChunks,
): AsyncGenerator<ChatEvent, void, undefined> {
  const res = await postStream(url, { headers, body: JSON.stringify(body), signal, options })
  yield* drive(res, new SseFramer(), new OpenAiStream(chunks), signal)
}

/**
 * One call without streaming (a caller that wants the whole reply: the adapter's non-stream
 * requests): one JSON answer instead of a stream of frames to parse and reassemble. The message is
 * read as one chunk holding everything, so the result is built by the same accumulator as a
 * stream's.
 */
export async function jsonChatComplete(
  url: string,
  headers: Record<string, string>,
  body: Record<string, unknown>,
  signal: AbortSignal | undefined,
  options: TransportOptions,
): Promise<ChatResult> {
  const res = await postStream(url, { headers, body: JSON.stringify(body), signal, options })
  let text: string
  try {
    text = await readBodyText(res)
  } catch (err) {
    throw toLlmError(err, signal)
  }
  let reply: unknown
  try {
    reply = JSON.parse(text)
  } catch (err) {
    throw badResponse(`the LLM provider's answer is not JSON: ${(err as Error).message}`, err)
  }
  if (!isRecord(reply)) throw badResponse('a chat completion is not an object')
  const choices = reply['choices']
  const choice: unknown = Array.isArray(choices) ? choices[0] : undefined
  if (!isRecord(choice) || !isRecord(choice['message'])) throw badResponse('a chat completion has no message')
  const message = choice['message']
  const calls = Array.isArray(message['tool_calls'])
    ? message['tool_calls'].map((c: unknown, index) => (isRecord(c) ? { index, ...c } : c))
    : undefined
  const chunks = new OpenAiChunks()
  const events: ChatEvent[] = []
  chunks.chunk(
    {
      usage: reply['usage'],
      choices: [
        {
          delta: { content: message['content'], ...(calls === undefined ? {} : { tool_calls: calls }) },
          finish_reason: choice['finish_reason'] ?? 'stop',
        },
      ],
    },
    events,
  )
  const done = chunks.acc.done()
  return {
    finish_reason: done.finish_reason,
    usage: done.usage,
    ...(done.cost === undefined ? {} : { cost: done.cost }),
    tool_calls: done.tool_calls,
    content: done.content,
  }
}

export interface OpenAiClient extends LlmClient {
  readonly providerType: 'openai'
  /** The chat completions URL the client posts to. */
  readonly url: string
}

export function createOpenAiClient(provider: ProviderConfig, clientOptions: TransportOptions = {}): OpenAiClient {
  const options = effectiveOptions(provider, clientOptions)
  const baseURL = (provider.api_endpoint ?? OPENAI_DEFAULT_BASE).replace(/\/+$/, '')
  const url = joinUrl(baseURL, '/chat/completions')
  const maxTokensParam =
    provider.config['max_tokens_param'] === 'max_completion_tokens' ? 'max_completion_tokens' : 'max_tokens'
  const defaultMaxTokens = positiveNumber(provider.config['max_tokens'])
  const org = provider.config['organization_id']
  const headers = openAiHeaders(provider.api_key, typeof org === 'string' && org !== '' ? org : null)

  const bodyOf = (req: ChatRequest, streamed: boolean): Record<string, unknown> => {
    const body: Record<string, unknown> = {
      model: req.model,
      messages: toOpenAiMessages(req.messages),
      ...(streamed ? { stream: true, stream_options: { include_usage: true } } : {}),
    }
    if (req.tools !== undefined && req.tools.length > 0) body['tools'] = toOpenAiTools(req.tools)
    if (req.temperature !== undefined) body['temperature'] = req.temperature
    const maxTokens = req.max_tokens ?? defaultMaxTokens
    if (maxTokens !== undefined) body[maxTokensParam] = maxTokens
    if (req.response_format !== undefined) body['response_format'] = req.response_format
    return body
  }

  async function* stream(req: ChatRequest): AsyncGenerator<ChatEvent, void, undefined> {
    yield* openAiWireStream(url, headers, bodyOf(req, true), req.signal, options, new OpenAiChunks())
  }

  return {
    providerType: 'openai',
    url,
    stream,
    complete: (req) => jsonChatComplete(url, headers, bodyOf(req, false), req.signal, options),
  }
}
