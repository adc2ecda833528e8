import { pooledRandomBytes } from '../kernel/pooled-random.ts'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { NAME_PATTERN } from '../../schemas/common.ts'
import { AppError } from '../kernel/errors.ts'
import type { ChatMessage, ChatResult, ToolCall, ToolDefinition, Usage } from '../llm/types.ts'
import {
  ChatCompletionBody,
  type ChatCompletionRequest,
  type ChunkDelta,
  type CompletionMessage,
  type OpenAiMessage as WireMessage,
  type TextPart,
} from '../../schemas/openai-wire.ts'

/*
 * The OpenAI Chat Completions wire as the adapter speaks it: the request body (checked here, not by
 * the gateway, so that a bad request is answered in OpenAI's error shape), its mapping to the
 * neutral LLM messages, the `chat.completion` and `chat.completion.chunk` objects, model ids and
 * the error body `{error: {message, type, param, code}}`.
 */

// ---------------------------------------------------------------------------------------------
// Request

export { ChatCompletionBody, type ChatCompletionRequest, type ChunkDelta, type CompletionMessage }

const checkBody = TypeCompiler.Compile(ChatCompletionBody)

/** OpenAI's error body. */
export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null }
}

/** An error answered in OpenAI's shape (the handlers turn every failure into one). */
export class AdapterError extends Error {
  override name = 'AdapterError'
  readonly status: number
  readonly type: string
  readonly code: string | null
  readonly param: string | null
  constructor(status: number, message: string, o: { type?: string; code?: string | null; param?: string | null } = {}) {
    super(message)
    this.status = status
    this.type = o.type ?? typeForStatus(status)
    this.code = o.code ?? null
    this.param = o.param ?? null
  }
  body(): OpenAiErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } }
  }
}

function typeForStatus(status: number): string {
  if (status === 401) return 'authentication_error'
  if (status === 403) return 'permission_error'
  if (status === 429) return 'rate_limit_error'
  if (status >= 500) return 'api_error'
  return 'invalid_request_error'
}

/** Any failure as an AdapterError: platform AppErrors keep their status, their dotted code becomes `code`. */
export function toAdapterError(err: unknown): AdapterError {
  if (err instanceof AdapterError) return err
  if (err instanceof AppError) return new AdapterError(err.status, err.message, { code: err.code })
  return new AdapterError(500, 'internal error', { code: 'internal' })
}

export const invalidRequest = (message: string, param: string | null = null, code: string | null = null) =>
  new AdapterError(400, message, { param, code })
export const modelNotFound = (model: string) =>
  new AdapterError(
    404,
    `The model \`${model}\` does not exist or you do not have access to it (models: GET /adapters/openai/v1/models)`,
    { code: 'model_not_found', param: 'model' },
  )

/** The body, checked. OpenAI answers 400 `invalid_request_error` naming the parameter. */
export function parseChatRequest(body: unknown): ChatCompletionRequest {
  if (checkBody.Check(body)) return body
  const first = checkBody.Errors(body).First()
  const param =
    first === undefined
      ? null
      : first.path
          .replace(/^\//, '')
          .replace(/\/(\d+)/g, '[$1]')
          .replace(/\//g, '.')
  throw invalidRequest(
    first === undefined ? 'invalid request body' : `${param === '' ? 'body' : String(param)}: ${first.message}`,
    param === '' ? null : param,
  )
}

/** Text of a message's content: a string, null, or text parts (other parts, e.g. images, are refused). */
function textOf(content: WireMessage['content'], at: string): string | null {
  if (content === undefined || content === null) return null
  if (typeof content === 'string') return content
  let out = ''
  for (let i = 0; i < content.length; i++) {
    const part = content[i] as { type: string; text?: unknown }
    if (part.type !== 'text' || typeof part.text !== 'string')
      throw invalidRequest(
        `${at}.content[${String(i)}]: only text content parts are supported (got ${part.type})`,
        `${at}.content`,
        'unsupported_content',
      )
    out += (part as TextPart).text
  }
  return out
}

/** The request's messages as neutral LLM messages (`developer` is a system message). */
export function toNeutralMessages(messages: readonly WireMessage[]): ChatMessage[] {
  const out: ChatMessage[] = []
  const calls = new Set<string>()
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i] as WireMessage
    const at = `messages[${String(i)}]`
    const text = textOf(m.content, at)
    switch (m.role) {
      case 'system':
      case 'developer':
      case 'user':
        out.push({ role: m.role === 'developer' ? 'system' : m.role, content: text ?? '' })
        break
      case 'assistant': {
        const toolCalls: ToolCall[] = (m.tool_calls ?? []).map((c) => ({
          id: c.id,
          type: 'function',
          function: { name: c.function.name, arguments: c.function.arguments },
        }))
        for (const c of toolCalls) calls.add(c.id)
        out.push(
          toolCalls.length > 0
            ? { role: 'assistant', content: text, tool_calls: toolCalls }
            : { role: 'assistant', content: text ?? '' },
        )
        break
      }
      case 'tool':
        if (m.tool_call_id === undefined)
          throw invalidRequest(`${at}: a tool message needs tool_call_id`, `${at}.tool_call_id`)
        if (!calls.has(m.tool_call_id))
          throw invalidRequest(
            `${at}: tool_call_id ${m.tool_call_id} answers no earlier assistant tool call`,
            `${at}.tool_call_id`,
          )
        out.push({ role: 'tool', content: text ?? '', tool_call_id: m.tool_call_id })
        break
    }
  }
  return out
}

/**
 * The tools offered to a provider model. The neutral LLM interface has no tool_choice, so it is
 * approximated: `none` offers no tools, a named function offers only that one, `auto` and
 * `required` offer them all (the provider is not forced to call one).
 */
export function toolsFor(req: ChatCompletionRequest): ToolDefinition[] {
  const tools = (req.tools ?? []).map((t) => ({
    name: t.function.name,
    description: t.function.description ?? '',
    parameters: t.function.parameters ?? { type: 'object', properties: {} },
  }))
  const choice = req.tool_choice
  if (choice === 'none') return []
  if (typeof choice === 'object' && choice !== null) {
    const named = tools.filter((t) => t.name === choice.function.name)
    if (named.length === 0)
      throw invalidRequest(`tool_choice names ${choice.function.name}, which is not in tools`, 'tool_choice')
    return named
  }
  return tools
}

// ---------------------------------------------------------------------------------------------
// Models

export type ModelTarget =
  | { kind: 'agent'; namespace: string; name: string }
  | { kind: 'provider'; provider: string; model: string }

const NAME = new RegExp(NAME_PATTERN)

/** `agent:<ns>/<name>` or `<provider>/<model>` (the model part may itself hold `/`); null when it is neither. */
export function parseModelId(id: string): ModelTarget | null {
  if (id.startsWith('agent:')) {
    const [ns = '', name = '', ...rest] = id.slice(6).split('/')
    return rest.length === 0 && NAME.test(ns) && NAME.test(name) ? { kind: 'agent', namespace: ns, name } : null
  }
  const slash = id.indexOf('/')
  if (slash <= 0 || slash === id.length - 1) return null
  return { kind: 'provider', provider: id.slice(0, slash), model: id.slice(slash + 1) }
}

export const agentModelId = (namespace: string, name: string) => `agent:${namespace}/${name}`
export const providerModelId = (provider: string, model: string) => `${provider}/${model}`

export interface ModelObject {
  id: string
  object: 'model'
  created: number
  owned_by: string
}

export const unixSeconds = (iso: string | number | Date): number => Math.floor(new Date(iso).getTime() / 1000)

// ---------------------------------------------------------------------------------------------
// Responses

export const completionId = (): string => `chatcmpl-${pooledRandomBytes(15).toString('base64url')}`

export function completion(o: {
  id: string
  created: number
  model: string
  content: string | null
  toolCalls?: readonly ToolCall[]
  finishReason: string
  usage: Usage | null
}) {
  const message: CompletionMessage = { role: 'assistant', content: o.content, refusal: null }
  if (o.toolCalls !== undefined && o.toolCalls.length > 0) message.tool_calls = [...o.toolCalls]
  return {
    id: o.id,
    object: 'chat.completion' as const,
    created: o.created,
    model: o.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: o.finishReason }],
    ...(o.usage === null ? {} : { usage: o.usage }),
    system_fingerprint: null,
  }
}

export const resultCompletion = (r: ChatResult, meta: { id: string; created: number; model: string }) =>
  completion({
    ...meta,
    content: r.content ?? (r.tool_calls.length > 0 ? null : ''),
    toolCalls: r.tool_calls,
    finishReason: r.finish_reason,
    usage: r.usage,
  })

/**
 * Builds the `chat.completion.chunk` objects of one stream. With `include_usage` every chunk has
 * `usage: null` and the last one (empty choices) carries the usage, as OpenAI does.
 */
export class ChunkWriter {
  readonly id = completionId()
  readonly created = Math.floor(Date.now() / 1000)
  readonly model: string
  readonly includeUsage: boolean
  constructor(model: string, includeUsage: boolean) {
    this.model = model
    this.includeUsage = includeUsage
  }
  private base() {
    return {
      id: this.id,
      object: 'chat.completion.chunk' as const,
      created: this.created,
      model: this.model,
      system_fingerprint: null,
    }
  }
  delta(delta: ChunkDelta, finishReason: string | null = null) {
    return {
      ...this.base(),
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
      ...(this.includeUsage ? { usage: null } : {}),
    }
  }
  usage(usage: Usage | null) {
    return { ...this.base(), choices: [], usage }
  }
}
