import { Type as T } from '@sinclair/typebox'
import { Name, Namespace, Nullable, Uuid } from '../../schemas/common.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'
import { Approval, ChatRecord, MessageRecord } from '../../schemas/chat.ts'

/* Chat endpoints (SPEC §4.1, WIRE.md "Chats and SSE"). The chat shapes live in schemas/chat.ts. */
const rpc = { auth: true as const, target: 'rpc' as const, surface: 'runtime' as const, tags: ['Chats'] }
const agentParams = T.Object({ namespace: Namespace, name: Name })
const chatParams = T.Object({ id: Uuid })
const content = T.Object({ content: T.String({ minLength: 1, maxLength: 1_000_000 }) }, { additionalProperties: false })

export const CHAT_ROUTES = {
  chatsCreate: defineRoute({
    ...rpc,
    id: 'chats.create',
    method: 'POST',
    path: '/agents/{namespace}/{name}/chats',
    summary: "Start a chat with an agent (input validated against the agent's input_schema)",
    params: agentParams,
    body: T.Object(
      {
        input: T.Optional(T.Record(T.String(), T.Unknown())),
        title: T.Optional(T.String({ maxLength: 500 })),
        expires_in: T.Optional(T.Integer({ minimum: 1, maximum: 365 * 86_400, description: 'seconds; the chat is hard-deleted after' })),
      },
      { additionalProperties: false },
    ),
    response: ChatRecord,
    status: 201,
    errors: [404, 422],
  }),
  chatsList: defineRoute({ ...rpc, id: 'chats.list', method: 'GET', path: '/chats', summary: "The caller's chats", query: T.Object({ include_archived: T.Optional(T.Boolean()), limit: T.Optional(T.Integer({ minimum: 1, maximum: 1000 })), offset: T.Optional(T.Integer({ minimum: 0 })) }), response: T.Array(ChatRecord) }),
  chatsGet: defineRoute({
    ...rpc,
    id: 'chats.get',
    method: 'GET',
    path: '/chats/{id}',
    summary: 'A chat with its messages and pending tool approvals',
    params: chatParams,
    response: T.Intersect([ChatRecord, T.Object({ messages: T.Array(MessageRecord), pending_approvals: T.Array(Approval) })]),
    errors: [404],
  }),
  chatsUpdate: defineRoute({ ...rpc, id: 'chats.update', method: 'PUT', path: '/chats/{id}', summary: 'Archive or rename a chat', params: chatParams, body: T.Object({ archived: T.Optional(T.Boolean()), title: T.Optional(Nullable(T.String({ maxLength: 500 }))) }, { additionalProperties: false }), response: ChatRecord, errors: [404] }),
  chatsDelete: defineRoute({ ...rpc, id: 'chats.delete', method: 'DELETE', path: '/chats/{id}', summary: 'Delete a chat and its messages', params: chatParams, status: 204, errors: [404] }),
  chatsSend: defineRoute({
    ...rpc,
    id: 'chats.send',
    method: 'POST',
    path: '/chats/{id}/messages',
    summary: 'Send a message and wait for the final assistant message',
    params: chatParams,
    body: content,
    response: T.Intersect([MessageRecord, T.Object({ status: T.String() })]),
    errors: [404, 409, 502, 504],
  }),
  chatsSendStream: defineRoute({
    ...rpc,
    id: 'chats.send-stream',
    method: 'POST',
    path: '/chats/{id}/messages/stream',
    summary: 'Send a message; the turn streams as Server-Sent Events (message, tool_start, tool_end, approval_required, done, error; every event has an id)',
    params: chatParams,
    body: content,
    stream: { format: 'platform' },
    errors: [404],
  }),
  chatsStream: defineRoute({
    ...rpc,
    id: 'chats.stream',
    method: 'GET',
    path: '/chats/{id}/stream/{channel_id}',
    summary: 'Resume a stream after a dropped connection: events after Last-Event-ID (or ?last_id=), then live',
    params: T.Object({ id: Uuid, channel_id: T.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' }) }),
    query: T.Object({ last_id: T.Optional(T.Integer({ minimum: 0 })) }),
    stream: { format: 'platform' },
    errors: [404],
  }),
  chatsApproveTool: defineRoute({
    ...rpc,
    id: 'chats.approve-tool',
    method: 'POST',
    path: '/chats/{id}/approve-tool/{tool_call_id}',
    summary: 'Approve or reject a tool call waiting for approval; the turn continues on the returned channel',
    params: T.Object({ id: Uuid, tool_call_id: T.String({ minLength: 1, maxLength: 200 }) }),
    body: T.Object({ approved: T.Boolean() }, { additionalProperties: false }),
    response: T.Object({ status: T.Union([T.Literal('approved'), T.Literal('rejected')]), tool_call_id: T.String(), channel_id: T.String() }),
    status: 202,
    errors: [404, 409],
  }),
  agentsInvoke: defineRoute({
    ...rpc,
    id: 'agents.invoke',
    method: 'POST',
    path: '/agents/{namespace}/{name}/invoke',
    summary: 'One message to an agent and its reply in one payload; session_key keeps one chat per key',
    params: agentParams,
    body: T.Object(
      {
        message: T.String({ minLength: 1, maxLength: 1_000_000 }),
        session_key: T.Optional(T.String({ minLength: 1, maxLength: 200 })),
        reset: T.Optional(T.Boolean()),
        input: T.Optional(T.Record(T.String(), T.Unknown())),
      },
      { additionalProperties: false },
    ),
    response: T.Object({ reply: T.String(), chat_id: Uuid, session_key: Nullable(T.String()) }),
    errors: [404, 422, 502, 504],
  }),
}

export function chatRoutes(): RouteDef[] {
  return Object.values(CHAT_ROUTES)
}
