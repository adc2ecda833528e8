import { randomBytes } from 'node:crypto'
import { StringDecoder } from 'node:string_decoder'
import { createParser, type EventSourceParser } from 'eventsource-parser'
import { AppError } from '../kernel/errors.ts'
import { guardedStream, type OutboundDeps, type OutboundStream } from '../platform/outbound-http.ts'
import { traceparentField } from '../platform/tracing.ts'
import {
  LlmError,
  type ChatEvent,
  type DoneEvent,
  type FinishReason,
  type ToolCall,
  type ProviderConfig,
  type ToolCallDeltaEvent,
  type Usage,
} from './types.ts'

/*
 * What the four clients share: the HTTP exchange through the guarded outbound client, error
 * mapping, incremental SSE / NDJSON framing, tool call assembly and the stream driver.
 *
 * Hot path: one `await` per network chunk. A chunk is split into frames synchronously, each frame
 * is parsed once (`JSON.parse`) and turned into neutral events in a reused array, which the
 * driver yields. No intermediate generator per frame, no per-frame objects besides the events.
 */

export interface TransportOptions {
  /** DNS + connect + TLS + the response head. Default 60 s. */
  firstByteTimeoutMs?: number
  /** Longest silence between two body chunks. Default 120 s (reasoning models may think silently). */
  idleTimeoutMs?: number
  /** Cap over one response body. Default 64 MiB. */
  maxResponseBytes?: number
  /** Name resolution and extra CAs for the outbound client (tests, private CAs). */
  outbound?: OutboundDeps
}

/** The client options with the provider's own `config` overrides (`first_byte_timeout_ms`, `idle_timeout_ms`) applied. */
export function effectiveOptions(provider: ProviderConfig, options: TransportOptions): TransportOptions {
  const firstByte = positiveNumber(provider.config['first_byte_timeout_ms'])
  const idle = positiveNumber(provider.config['idle_timeout_ms'])
  return {
    ...options,
    ...(firstByte === undefined ? {} : { firstByteTimeoutMs: firstByte }),
    ...(idle === undefined ? {} : { idleTimeoutMs: idle }),
  }
}

export const positiveNumber = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : undefined

/** `base` without trailing slashes, followed by `path`. */
export const joinUrl = (base: string, path: string) => `${base.replace(/\/+$/, '')}${path}`

export const DEFAULT_FIRST_BYTE_TIMEOUT_MS = 60_000
export const DEFAULT_IDLE_TIMEOUT_MS = 120_000
const ERROR_BODY_MAX = 64 * 1024
const RETRYABLE_STATUS = new Set([408, 409, 425, 429, 500, 502, 503, 504, 529])

/** Maps anything thrown by the outbound client (or the signal) to an LlmError; unknown errors pass through. */
export function toLlmError(err: unknown, signal?: AbortSignal): unknown {
  if (err instanceof LlmError) return err
  if (signal?.aborted === true) return new LlmError('llm.aborted', 'the LLM call was aborted', { cause: err })
  if (!(err instanceof AppError)) return err
  switch (err.code) {
    case 'outbound.timeout':
      return new LlmError('llm.timeout', `the LLM provider did not answer in time: ${err.message}`, {
        retryable: true,
        cause: err,
      })
    case 'outbound.aborted':
      return new LlmError('llm.aborted', 'the LLM call was aborted', { cause: err })
    case 'outbound.connect_failed':
    case 'upstream.dns_failed':
      return new LlmError('llm.connection_failed', `the LLM provider could not be reached: ${err.message}`, {
        retryable: true,
        cause: err,
      })
    case 'outbound.response_too_large':
      return new LlmError('llm.bad_response', err.message, { cause: err })
    default:
      if (err.code.startsWith('outbound.'))
        return new LlmError('llm.endpoint_refused', `the LLM provider endpoint is refused: ${err.message}`, {
          cause: err,
        })
      return err
  }
}

export const badResponse = (detail: string, cause?: unknown) =>
  new LlmError('llm.bad_response', detail, cause === undefined ? {} : { cause })

/** JSON.parse of one frame; a frame that is not JSON is a protocol error. */
export function parseFrame(data: string): Record<string, unknown> {
  let v: unknown
  try {
    v = JSON.parse(data)
  } catch (err) {
    throw badResponse(`the LLM provider sent a frame that is not JSON: ${data.slice(0, 120)}`, err)
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw badResponse(`the LLM provider sent a frame that is not an object: ${data.slice(0, 120)}`)
  return v as Record<string, unknown>
}

function retryAfterMs(value: string | string[] | undefined): number | undefined {
  const v = Array.isArray(value) ? value[0] : value
  if (v === undefined || v.trim() === '') return undefined
  const seconds = Number(v)
  if (Number.isFinite(seconds)) return Math.max(0, Math.round(seconds * 1000))
  const at = Date.parse(v)
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now())
}

/** The human message in a provider's error body (OpenAI, Anthropic, Mistral, Ollama shapes). */
function errorMessage(text: string): string {
  try {
    const body = JSON.parse(text) as Record<string, unknown>
    const e = body['error']
    if (typeof e === 'string') return e
    if (typeof e === 'object' && e !== null && typeof (e as Record<string, unknown>)['message'] === 'string')
      return (e as Record<string, string>)['message'] as string
    for (const key of ['message', 'detail']) {
      const m = body[key]
      if (typeof m === 'string') return m
      if (m !== undefined) return JSON.stringify(m)
    }
  } catch {
    // not JSON: the text itself
  }
  return text
}

export interface PostInit {
  headers: Record<string, string>
  body: string
  signal: AbortSignal | undefined
  /** Provider URLs are set by administrators: plain http and private addresses allowed (see README). */
  options: TransportOptions
}

export interface ExchangeInit {
  method: string
  headers: Record<string, string>
  body?: string | Uint8Array
  signal?: AbortSignal | undefined
}

/**
 * Opens one exchange with a provider through the guarded outbound client (every LLM byte goes
 * this way) and returns it whatever its status; failures before the response head are thrown as
 * `LlmError`.
 */
export async function openExchange(
  url: string,
  init: ExchangeInit,
  options: TransportOptions,
): Promise<OutboundStream> {
  const { signal } = init
  try {
    return await guardedStream(
      url,
      {
        method: init.method,
        headers: init.headers,
        ...(init.body === undefined ? {} : { body: init.body }),
        headTimeoutMs: options.firstByteTimeoutMs ?? DEFAULT_FIRST_BYTE_TIMEOUT_MS,
        idleTimeoutMs: options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
        ...(options.maxResponseBytes === undefined ? {} : { maxResponseBytes: options.maxResponseBytes }),
        // Provider endpoints are admin-configured (llm_provider is an admin-only kind) and local
        // runners (Ollama, vLLM, a proxy) commonly listen on loopback or the LAN over plain http.
        // Link-local / metadata and other special ranges stay refused by the guard.
        httpsOnly: false,
        allowPrivate: true,
        ...(signal === undefined ? {} : { signal }),
      },
      options.outbound ?? {},
    )
  } catch (err) {
    throw toLlmError(err, signal)
  }
}

/** What the platform's LLM requests say they come from. */
const LLM_USER_AGENT = 'agent-platform-llm/1'

/** POSTs a JSON body and returns the open 2xx stream; any other status becomes `llm.http_error`. */
export async function postStream(url: string, init: PostInit): Promise<OutboundStream> {
  const res = await openExchange(
    url,
    {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'text/event-stream, application/x-ndjson, application/json',
        'user-agent': LLM_USER_AGENT,
        // the call's span (traced-client.ts), so a provider or proxy that traces continues the trace
        ...traceparentField(),
        ...init.headers,
      },
      body: init.body,
      signal: init.signal,
    },
    init.options,
  )
  if (res.status >= 200 && res.status < 300) return res
  throw await httpErrorOf(res)
}

/**
 * An answer's body as text: reading stops once `maxBytes` have come and the text is cut to that
 * many characters; then closes `res`. A failed read is thrown as it came (callers map it with
 * toLlmError, or ignore it).
 */
export async function readBodyText(res: OutboundStream, maxBytes = Number.POSITIVE_INFINITY): Promise<string> {
  try {
    const parts: Buffer[] = []
    let size = 0
    for await (const chunk of res.body) {
      parts.push(chunk)
      size += chunk.length
      if (size >= maxBytes) break
    }
    const text = (parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts)).toString('utf8')
    return Number.isFinite(maxBytes) ? text.slice(0, maxBytes) : text
  } finally {
    res.close()
  }
}

/** A non-2xx answer as `llm.http_error`: the provider's message from its error body (read up to 64 KiB), retryability, `retry-after`. Closes `res`. */
export async function httpErrorOf(res: OutboundStream): Promise<LlmError> {
  // the status is what counts: a body that cannot be read is no message
  const text = await readBodyText(res, ERROR_BODY_MAX).catch(() => '')
  const message = errorMessage(text).slice(0, 500)
  const retryAfter = retryAfterMs(res.headers['retry-after'])
  return new LlmError(
    'llm.http_error',
    `the LLM provider answered ${String(res.status)}${message === '' ? '' : `: ${message}`}`,
    {
      providerStatus: res.status,
      retryable: RETRYABLE_STATUS.has(res.status),
      ...(retryAfter === undefined ? {} : { retryAfterMs: retryAfter }),
    },
  )
}

// ---------------------------------------------------------------------------------------------
// Framing

export type FrameHandler = (event: string, data: string) => void

export interface Framer {
  feed(chunk: Buffer, on: FrameHandler): void
  end(on: FrameHandler): void
}

/**
 * Server-Sent Events through `eventsource-parser` (the maintained WHATWG parser): `data:` lines of
 * one event joined with `\n`, `event:` names it, comments and other fields ignored. A chunk is
 * decoded with a `StringDecoder`, so UTF-8 split across chunks is kept whole. At the end of the
 * body an event still missing its blank line is dispatched (a server that closes right after its
 * last `data:` line still delivered it).
 */
export class SseFramer implements Framer {
  private readonly decoder = new StringDecoder('utf8')
  private on: FrameHandler = () => {}
  private readonly parser: EventSourceParser = createParser({ onEvent: (e) => this.on(e.event ?? '', e.data) })

  feed(chunk: Buffer, on: FrameHandler): void {
    this.on = on
    this.parser.feed(this.decoder.write(chunk))
  }

  end(on: FrameHandler): void {
    this.on = on
    this.parser.feed(`${this.decoder.end()}\n\n`)
  }
}

/** Newline-delimited JSON (Ollama): one frame per non-empty line, the event name is empty. */
export class NdjsonFramer implements Framer {
  private readonly decoder = new StringDecoder('utf8')
  private rest = ''

  feed(chunk: Buffer, on: FrameHandler): void {
    // `rest` holds no newline: the search starts after it (a long line arriving in many chunks is scanned once).
    const scanned = this.rest.length
    const text = scanned === 0 ? this.decoder.write(chunk) : this.rest + this.decoder.write(chunk)
    let start = 0
    for (let nl = text.indexOf('\n', scanned); nl >= 0; nl = text.indexOf('\n', start)) {
      const end = nl > start && text.charCodeAt(nl - 1) === 13 ? nl - 1 : nl
      if (end > start) on('', text.slice(start, end))
      start = nl + 1
    }
    this.rest = start === 0 ? text : text.slice(start)
  }

  end(on: FrameHandler): void {
    const text = (this.rest + this.decoder.end()).trim()
    this.rest = ''
    if (text !== '') on('', text)
  }
}

// ---------------------------------------------------------------------------------------------
// Assembly

/** An id for providers that send none (Ollama, some OpenAI-compatible servers). */
export const syntheticCallId = () => `call_${randomBytes(12).toString('base64url')}`

/** Text, tool calls, usage and finish reason accumulated over one stream. */
export class Accumulator {
  content = ''
  finishReason: FinishReason | null = null
  promptTokens = 0
  completionTokens = 0
  totalTokens: number | null = null
  /** The cost the provider reported for the call (its own currency unit, usually USD); null: none reported. */
  cost: number | null = null
  private readonly ids: (string | undefined)[] = []
  private readonly names: string[] = []
  private readonly args: string[] = []

  /** A `usage.cost` as the provider sent it: kept when it is a finite, non-negative number (the last one wins). */
  reportCost(v: unknown): void {
    if (typeof v === 'number' && Number.isFinite(v) && v >= 0) this.cost = v
  }

  text(delta: string, out: ChatEvent[]): void {
    this.content += delta
    out.push({ type: 'text', delta })
  }

  /** Records and emits one tool call piece. */
  tool(
    index: number,
    id: string | undefined,
    name: string | undefined,
    argumentsDelta: string | undefined,
    out: ChatEvent[],
  ): void {
    if (!Number.isInteger(index) || index < 0 || index > 1024)
      throw badResponse(`tool call index ${String(index)} is out of range`)
    while (this.names.length <= index) {
      this.ids.push(undefined)
      this.names.push('')
      this.args.push('')
    }
    const event: ToolCallDeltaEvent = { type: 'tool_call_delta', index }
    // id and name come with the first piece; servers that repeat them later are not concatenated.
    if (id !== undefined && id !== '' && this.ids[index] === undefined) {
      this.ids[index] = id
      event.id = id
    }
    if (name !== undefined && name !== '' && this.names[index] === '') {
      this.names[index] = name
      event.name = name
    }
    if (argumentsDelta !== undefined && argumentsDelta !== '') {
      this.args[index] += argumentsDelta
      event.arguments_delta = argumentsDelta
    }
    out.push(event)
  }

  get toolCount(): number {
    return this.names.length
  }

  done(): DoneEvent {
    const tool_calls: ToolCall[] = []
    for (let i = 0; i < this.names.length; i++) {
      const name = this.names[i] as string
      if (name === '') throw badResponse(`tool call ${String(i)} has no name`)
      let id = this.ids[i]
      if (id === undefined) {
        id = syntheticCallId()
        this.ids[i] = id
      }
      const args = this.args[i] as string
      tool_calls.push({ id, type: 'function', function: { name, arguments: args.trim() === '' ? '{}' : args } })
    }
    let finish = this.finishReason ?? 'stop'
    // Ollama and some OpenAI-compatible servers say `stop` on a reply that calls tools.
    if (tool_calls.length > 0 && finish === 'stop') finish = 'tool_calls'
    const usage: Usage = {
      prompt_tokens: this.promptTokens,
      completion_tokens: this.completionTokens,
      total_tokens: this.totalTokens ?? this.promptTokens + this.completionTokens,
    }
    return {
      type: 'done',
      finish_reason: finish,
      usage,
      ...(this.cost === null ? {} : { cost: this.cost }),
      tool_calls,
      content: this.content === '' ? null : this.content,
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Driver

export interface StreamProtocol {
  /** Handles one frame, pushing neutral events into `out`; throws LlmError on protocol errors. */
  frame(event: string, data: string, out: ChatEvent[]): void
  /** The terminal frame was seen; the driver stops reading. */
  readonly finished: boolean
  /** Whether a stream that ends without the terminal frame is still complete (e.g. a finish reason was seen). */
  completeAtEof(): boolean
  readonly acc: Accumulator
}

/** Reads `res` through `framer` into `protocol` and yields its events, then `done`. */
export async function* drive(
  res: OutboundStream,
  framer: Framer,
  protocol: StreamProtocol,
  signal: AbortSignal | undefined,
): AsyncGenerator<ChatEvent, void, undefined> {
  const out: ChatEvent[] = []
  const on: FrameHandler = (event, data) => {
    if (!protocol.finished) protocol.frame(event, data, out)
  }
  try {
    for await (const chunk of res.body) {
      framer.feed(chunk, on)
      for (let i = 0; i < out.length; i++) yield out[i] as ChatEvent
      out.length = 0
      if (protocol.finished) break
    }
    if (!protocol.finished) {
      framer.end(on)
      for (let i = 0; i < out.length; i++) yield out[i] as ChatEvent
      out.length = 0
      if (!protocol.finished && !protocol.completeAtEof())
        throw badResponse('the LLM stream ended before the reply was complete')
    }
  } catch (err) {
    throw toLlmError(err, signal)
  } finally {
    res.close()
  }
  yield protocol.acc.done()
}
