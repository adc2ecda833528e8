import { Type as T, type Static } from '@sinclair/typebox'
import { Name, Namespace, Nullable, Uuid } from './common.ts'

/*
 * Chats, their messages, tool calls and tool approvals: the
 * one definition the chat routes answer with, the chat store reads and writes, and the LLM layer
 * hands to providers (a stored message is a neutral LLM message, see llm.ts).
 */

/** One tool call of an assistant message; `arguments` is the model's JSON text. */
export const ToolCall = T.Object({
  id: T.String(),
  type: T.Literal('function'),
  function: T.Object({ name: T.String(), arguments: T.String() }),
})
export type ToolCall = Static<typeof ToolCall>

export const MessageRole = T.Union([T.Literal('user'), T.Literal('assistant'), T.Literal('system'), T.Literal('tool')])
export type MessageRole = Static<typeof MessageRole>

/** A stored chat message (`chat_messages`), as the API returns it. */
export const MessageRecord = T.Object(
  {
    id: Uuid,
    chat_id: Uuid,
    role: MessageRole,
    content: Nullable(T.String()),
    tool_calls: Nullable(T.Array(ToolCall)),
    tool_call_id: Nullable(T.String()),
    name: Nullable(T.String()),
    created_at: T.String(),
  },
  { title: 'ChatMessage' },
)
export type MessageRecord = Static<typeof MessageRecord>

const chatFields = {
  id: Uuid,
  user_id: Uuid,
  agent_namespace: T.String(),
  agent_name: T.String(),
  title: Nullable(T.String()),
  input: T.Record(T.String(), T.Unknown()),
  archived: T.Boolean(),
  session_key: Nullable(T.String()),
  expires_at: Nullable(T.String()),
  active_channel_id: Nullable(T.String()),
  created_at: T.String(),
  updated_at: T.String(),
  last_message_at: Nullable(T.String()),
}

/** A chat as the API returns it. */
export const ChatRecord = T.Object(chatFields, { title: 'Chat' })
export type ChatRecord = Static<typeof ChatRecord>

/** A chat as stored (`chats`): the API record plus the agent's id and whether it is a sub-agent's hidden chat. */
export const ChatRow = T.Object({ ...chatFields, agent_id: Uuid, internal: T.Boolean() })
export type ChatRow = Static<typeof ChatRow>

/** A tool call waiting for the user's decision (POST /chats/{id}/approve-tool). */
export const Approval = T.Object({
  tool_call_id: T.String(),
  function_namespace: T.String(),
  function_name: T.String(),
  arguments: T.Record(T.String(), T.Unknown()),
})
export type Approval = Static<typeof Approval>

/* The chat routes' params, bodies and answers. */
export const AgentParams = T.Object({ namespace: Namespace, name: Name })
export const ChatParams = T.Object({ id: Uuid })
export const ChatStreamParams = T.Object({ id: Uuid, channel_id: T.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' }) })
export const ChatStreamQuery = T.Object({ last_id: T.Optional(T.Integer({ minimum: 0 })) })
export const ToolApprovalParams = T.Object({ id: Uuid, tool_call_id: T.String({ minLength: 1, maxLength: 200 }) })
export const ChatListQuery = T.Object({
  include_archived: T.Optional(T.Boolean()),
  limit: T.Optional(T.Integer({ minimum: 1, maximum: 1000 })),
  offset: T.Optional(T.Integer({ minimum: 0 })),
})

export const ChatCreateBody = T.Object(
  {
    input: T.Optional(T.Record(T.String(), T.Unknown())),
    title: T.Optional(T.String({ maxLength: 500 })),
    expires_in: T.Optional(
      T.Integer({ minimum: 1, maximum: 365 * 86_400, description: 'seconds; the chat is hard-deleted after' }),
    ),
  },
  { additionalProperties: false },
)
export const ChatUpdateBody = T.Object(
  { archived: T.Optional(T.Boolean()), title: T.Optional(Nullable(T.String({ maxLength: 500 }))) },
  { additionalProperties: false },
)
export const MessageBody = T.Object(
  { content: T.String({ minLength: 1, maxLength: 1_000_000 }) },
  { additionalProperties: false },
)
export const ToolApprovalBody = T.Object({ approved: T.Boolean() }, { additionalProperties: false })
export const InvokeBody = T.Object(
  {
    message: T.String({ minLength: 1, maxLength: 1_000_000 }),
    session_key: T.Optional(T.String({ minLength: 1, maxLength: 200 })),
    reset: T.Optional(T.Boolean()),
    input: T.Optional(T.Record(T.String(), T.Unknown())),
  },
  { additionalProperties: false },
)

export const ChatWithMessages = T.Intersect([
  ChatRecord,
  T.Object({ messages: T.Array(MessageRecord), pending_approvals: T.Array(Approval) }),
])
export const SentMessage = T.Intersect([MessageRecord, T.Object({ status: T.String() })])
export const ToolApprovalAnswer = T.Object({
  status: T.Union([T.Literal('approved'), T.Literal('rejected')]),
  tool_call_id: T.String(),
  channel_id: T.String(),
})
/** `POST /chats/{id}/cancel`: the running turn's job cancelled, or nothing was running. */
export const ChatCancelAnswer = T.Union([
  T.Object({ status: T.Literal('cancelled'), job_id: Uuid }),
  T.Object({ status: T.Literal('idle') }),
])
export const InvokeAnswer = T.Object({ reply: T.String(), chat_id: Uuid, session_key: Nullable(T.String()) })
