import { AppError } from '../kernel/errors.ts'
import type { ToolCall } from '../../schemas/chat.ts'
import type { LlmMessage, ProviderConfig, ProviderType, ToolDefinition, Usage } from '../../schemas/llm.ts'

/*
 * The provider-neutral LLM interface. The shapes that cross a boundary (messages, tool calls,
 * tool definitions, usage, provider settings) are defined once in schemas/llm.ts and
 * schemas/chat.ts; messages and tool calls have the shape of the chat message records,
 * so a turn can hand stored history to any provider; each client maps it to its wire protocol.
 * Only the in-process shapes (events, the client interface, errors) live here.
 */

export type { ProviderConfig, ProviderType, ToolCall, ToolDefinition, Usage }
export type { MessageRole as Role } from '../../schemas/chat.ts'
/** A neutral message (schemas/llm.ts `LlmMessage`). */
export type ChatMessage = LlmMessage

export interface ChatRequest {
  model: string
  messages: readonly ChatMessage[]
  tools?: readonly ToolDefinition[]
  temperature?: number
  max_tokens?: number
  /**
   * Structured output, in OpenAI's `response_format` shape (the neutral form: an agent's
   * output_schema becomes `{type: 'json_schema', json_schema: {name, schema}}`; the adapter passes
   * a client's own through). Each client maps it to what its wire allows: OpenAI and Mistral send
   * it as given, Ollama as `format`, Anthropic (no such parameter) as an instruction in `system`.
   */
  response_format?: ResponseFormat
  /** Aborting ends the exchange; the stream throws `llm.aborted`. */
  signal?: AbortSignal
}

/** OpenAI's `response_format`: `text`, `json_object`, or `json_schema` with its schema (other members kept for pass-through). */
export interface ResponseFormat {
  type: string
  json_schema?: {
    name: string
    schema?: Record<string, unknown>
    strict?: boolean
    description?: string
    [k: string]: unknown
  }
  [k: string]: unknown
}

/** Normalised: `stop`, `tool_calls`, `length`, `content_filter`; anything else is passed through as the provider said it. */
export type FinishReason = 'stop' | 'tool_calls' | 'length' | 'content_filter' | (string & {})

export interface TextEvent {
  type: 'text'
  delta: string
}

/**
 * A piece of tool call number `index` (0, 1, … in the order the model started them). The first
 * piece of a call carries `id` and `name`; `arguments_delta` pieces concatenate to its JSON arguments.
 */
export interface ToolCallDeltaEvent {
  type: 'tool_call_delta'
  index: number
  id?: string
  name?: string
  arguments_delta?: string
}

/** Always the last event of a stream that did not throw. */
export interface DoneEvent {
  type: 'done'
  finish_reason: FinishReason
  /** Zeros when the provider reported none. */
  usage: Usage
  /**
   * The call's cost as the provider reported it (`usage.cost` of OpenAI-compatible gateways such
   * as OpenRouter); absent when it reported none — never computed from a price list.
   */
  cost?: number
  /** The calls assembled from the deltas, in index order; arguments are `{}` when the model sent none. */
  tool_calls: ToolCall[]
  /** The whole text, or null when the model produced none. */
  content: string | null
}

export type ChatEvent = TextEvent | ToolCallDeltaEvent | DoneEvent

export type ChatResult = Omit<DoneEvent, 'type'>

export interface LlmClient {
  readonly providerType: ProviderType
  /**
   * One model call, streamed. Events arrive as the provider sends them; the last one is `done`.
   * Failures are thrown as `LlmError` (before the first event or in the middle of the stream).
   * Breaking out of the loop ends the HTTP exchange.
   */
  stream(req: ChatRequest): AsyncIterable<ChatEvent>
  /** `stream` collected: the `done` event without its type. */
  complete(req: ChatRequest): Promise<ChatResult>
}

export type LlmErrorCode =
  /** the provider answered a non-2xx status (`providerStatus`) */
  | 'llm.http_error'
  /** no response head within the first-byte timeout, or silence longer than the idle timeout */
  | 'llm.timeout'
  /** a stream that does not parse, ends early, or breaks the protocol */
  | 'llm.bad_response'
  /** the connection could not be made or broke off */
  | 'llm.connection_failed'
  /** the caller's AbortSignal fired */
  | 'llm.aborted'
  /** the provider reported an error inside a 200 stream (e.g. Anthropic `overloaded_error`) */
  | 'llm.stream_error'
  /** the outbound guard refused the endpoint (bad URL, scheme, link-local address …) */
  | 'llm.endpoint_refused'
  /** the request cannot be expressed on the wire (e.g. a tool message without tool_call_id) */
  | 'llm.invalid_request'
  /** provider resolution: no agent provider and no default provider */
  | 'llm.no_provider'
  /** provider resolution: the agent's provider does not exist (or is disabled) */
  | 'llm.provider_not_found'
  /** provider resolution: neither the agent nor the provider names a model */
  | 'llm.no_model'

/**
 * The one error type of this layer. It is an AppError, so it reaches clients as the platform's
 * error body: `status` is the platform's answer (502 provider failures, 504 timeouts, 499 aborted,
 * 422/503 resolution), `providerStatus` the provider's own HTTP status when there was one.
 */
export class LlmError extends AppError {
  override name = 'LlmError'
  readonly providerStatus: number | undefined
  /** Worth retrying the same call later (429, 5xx, 529, timeouts, dropped connections, overloaded). */
  readonly retryable: boolean
  /** From a `retry-after` header, when the provider sent one. */
  readonly retryAfterMs: number | undefined

  constructor(
    code: LlmErrorCode,
    detail: string,
    options: {
      status?: number
      providerStatus?: number
      retryable?: boolean
      retryAfterMs?: number
      cause?: unknown
    } = {},
  ) {
    super(
      options.status ?? defaultStatus(code),
      code,
      detail,
      options.cause === undefined ? {} : { cause: options.cause },
    )
    this.providerStatus = options.providerStatus
    this.retryable = options.retryable ?? false
    this.retryAfterMs = options.retryAfterMs
  }
}

function defaultStatus(code: LlmErrorCode): number {
  switch (code) {
    case 'llm.timeout':
      return 504
    case 'llm.aborted':
      return 499
    case 'llm.invalid_request':
      return 500
    case 'llm.no_provider':
      return 503
    case 'llm.provider_not_found':
    case 'llm.no_model':
      return 422
    default:
      return 502
  }
}

/** Drains a stream into its result. */
export async function collect(events: AsyncIterable<ChatEvent>): Promise<ChatResult> {
  for await (const e of events) {
    if (e.type === 'done')
      return {
        finish_reason: e.finish_reason,
        usage: e.usage,
        ...(e.cost === undefined ? {} : { cost: e.cost }),
        tool_calls: e.tool_calls,
        content: e.content,
      }
  }
  throw new LlmError('llm.bad_response', 'the stream ended without a result')
}

/**
 * A tool call's `arguments` (JSON text, as the chat records keep them) as the object the
 * Anthropic and Ollama wire protocols need: `{}` for text that is not a JSON object (a model's
 * broken arguments cannot be recovered, and those APIs refuse anything but an object).
 */
export function argumentsObject(args: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(args)
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) return v as Record<string, unknown>
  } catch {
    // not JSON: falls through to {}
  }
  return {}
}
