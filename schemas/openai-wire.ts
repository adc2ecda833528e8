import { Type as T, type Static } from '@sinclair/typebox'
import { ToolCall } from './chat.ts'
import { LlmMessage } from './llm.ts'

/*
 * The OpenAI Chat Completions wire, both ways: what the OpenAI-compatible adapter accepts
 * (`ChatCompletionBody`: checked by the adapter itself, so a bad request is answered in OpenAI's
 * error shape) and answers (`CompletionMessage`, `ChunkDelta`), and what the platform's OpenAI
 * and Mistral clients send (`OpenAiOutboundMessage`).
 */

export const TextPart = T.Object({ type: T.Literal('text'), text: T.String() }, { additionalProperties: true })
export type TextPart = Static<typeof TextPart>
const Content = T.Union([
  T.String(),
  T.Null(),
  T.Array(T.Object({ type: T.String() }, { additionalProperties: true }), { maxItems: 1000 }),
])
const WireToolCall = T.Object(
  {
    id: T.String({ minLength: 1, maxLength: 200 }),
    type: T.Optional(T.Literal('function')),
    function: T.Object(
      { name: T.String({ minLength: 1, maxLength: 200 }), arguments: T.String() },
      { additionalProperties: true },
    ),
  },
  { additionalProperties: true },
)
/** A request message as clients send it (roles incl. developer, content parts, loose tool calls). */
export const OpenAiMessage = T.Object(
  {
    role: T.Union([
      T.Literal('system'),
      T.Literal('developer'),
      T.Literal('user'),
      T.Literal('assistant'),
      T.Literal('tool'),
    ]),
    content: T.Optional(Content),
    name: T.Optional(T.String({ maxLength: 200 })),
    tool_calls: T.Optional(T.Union([T.Array(WireToolCall, { maxItems: 128 }), T.Null()])),
    tool_call_id: T.Optional(T.String({ minLength: 1, maxLength: 200 })),
  },
  { additionalProperties: true },
)
const Tool = T.Object(
  {
    type: T.Literal('function'),
    function: T.Object(
      {
        name: T.String({ pattern: '^[a-zA-Z0-9_-]{1,64}$' }),
        description: T.Optional(T.String({ maxLength: 100_000 })),
        parameters: T.Optional(T.Record(T.String(), T.Unknown())),
        strict: T.Optional(T.Union([T.Boolean(), T.Null()])),
      },
      { additionalProperties: true },
    ),
  },
  { additionalProperties: true },
)
const ToolChoice = T.Union([
  T.Literal('none'),
  T.Literal('auto'),
  T.Literal('required'),
  T.Object({ type: T.Literal('function'), function: T.Object({ name: T.String() }) }, { additionalProperties: true }),
])
const opt = <S extends Parameters<typeof T.Optional>[0]>(s: S) => T.Optional(T.Union([s, T.Null()]))

export const ChatCompletionBody = T.Object(
  {
    model: T.String({
      minLength: 1,
      maxLength: 400,
      description: '`agent:<namespace>/<name>` or `<provider name>/<model>` (GET /adapters/openai/v1/models)',
    }),
    messages: T.Array(OpenAiMessage, { minItems: 1, maxItems: 10_000 }),
    stream: opt(T.Boolean()),
    stream_options: opt(T.Object({ include_usage: T.Optional(T.Boolean()) }, { additionalProperties: true })),
    temperature: opt(T.Number({ minimum: 0, maximum: 2 })),
    max_tokens: opt(T.Integer({ minimum: 1 })),
    max_completion_tokens: opt(T.Integer({ minimum: 1 })),
    tools: opt(T.Array(Tool, { maxItems: 128 })),
    tool_choice: opt(ToolChoice),
    n: opt(T.Integer({ minimum: 1, maximum: 1 })),
    user: opt(T.String({ maxLength: 500 })),
    /** Structured output (`text`, `json_object`, `json_schema`): passed to a provider model; an agent model answers by its own output_schema. */
    response_format: opt(
      T.Object({ type: T.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: true }),
    ),
    /** Not OpenAI: an agent's input variables (its input_schema), for `agent:` models. */
    input: opt(T.Record(T.String(), T.Unknown())),
  },
  { additionalProperties: true, title: 'ChatCompletionRequest' },
)
export type ChatCompletionRequest = Static<typeof ChatCompletionBody>

export type OpenAiMessage = Static<typeof OpenAiMessage>

/** A message the platform sends to an OpenAI-compatible provider (neutral message + Mistral's `name`). */
export const OpenAiOutboundMessage = T.Object({ ...LlmMessage.properties, name: T.Optional(T.String()) })
export type OpenAiOutboundMessage = Static<typeof OpenAiOutboundMessage>

/** The assistant message of a `chat.completion`. */
export const CompletionMessage = T.Object({
  role: T.Literal('assistant'),
  content: T.Union([T.String(), T.Null()]),
  refusal: T.Null(),
  tool_calls: T.Optional(T.Array(ToolCall)),
})
export type CompletionMessage = Static<typeof CompletionMessage>

/** The `delta` of a `chat.completion.chunk`. */
export const ChunkDelta = T.Object({
  role: T.Optional(T.Literal('assistant')),
  content: T.Optional(T.Union([T.String(), T.Null()])),
  tool_calls: T.Optional(
    T.Array(
      T.Object({
        index: T.Integer(),
        id: T.Optional(T.String()),
        type: T.Optional(T.Literal('function')),
        function: T.Object({ name: T.Optional(T.String()), arguments: T.Optional(T.String()) }),
      }),
    ),
  ),
})
export type ChunkDelta = Static<typeof ChunkDelta>

/*
 * The adapter routes' documented shapes (src/adapter/routes.ts). The request body is documented loosely: the
 * adapter checks it itself against `ChatCompletionBody` so that errors keep OpenAI's shape.
 */
export const ChatCompletionRequestDoc = T.Record(T.String(), T.Unknown(), {
  description:
    "The OpenAI request: model, messages (system, developer, user, assistant with tool_calls, tool), stream, stream_options.include_usage, temperature, max_tokens / max_completion_tokens, tools, tool_choice; `input` (not OpenAI): an agent's input variables. Other OpenAI parameters are ignored.",
})
export const ChatCompletion = T.Object(
  {
    id: T.String(),
    object: T.Literal('chat.completion'),
    created: T.Integer(),
    model: T.String(),
    choices: T.Array(
      T.Object({ index: T.Integer(), message: T.Record(T.String(), T.Unknown()), finish_reason: T.String() }),
    ),
    usage: T.Optional(
      T.Object({ prompt_tokens: T.Integer(), completion_tokens: T.Integer(), total_tokens: T.Integer() }),
    ),
  },
  { title: 'ChatCompletion' },
)
export const OpenAiModel = T.Object(
  {
    id: T.String(),
    object: T.Literal('model'),
    created: T.Integer({ description: 'unix seconds' }),
    owned_by: T.String({ description: '`agent:<namespace>` for agents, the provider name for provider models' }),
  },
  { title: 'Model' },
)

export const ModelList = T.Object({ object: T.Literal('list'), data: T.Array(OpenAiModel) })
export const ModelParams = T.Object({ model_id: T.String({ minLength: 1, maxLength: 400 }) })
export const ModelPathParams = T.Object({
  owner: T.String({ minLength: 1, maxLength: 200 }),
  model: T.String({ minLength: 1, maxLength: 300 }),
})
