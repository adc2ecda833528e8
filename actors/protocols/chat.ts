import { Type as T, type Static } from '@sinclair/typebox'
import type { ActorProtocol } from '../../schemas/actor-protocol.ts'

/*
 * The chat actor's protocol: one actor per chat (key = chat id). `send` queues a turn (a user
 * message, an approval answer or the resume of a suspended turn) under a job id the sender chose
 * and waits on; `ended` reports that the running turn's job finished. Imports only typebox (the
 * protocol type is erased), so any sender can import it.
 */
export const ChatTurn = T.Object({
  job_id: T.String({ format: 'uuid' }),
  content: T.Optional(T.String()),
  channel_id: T.Union([T.String(), T.Null()]),
  user_id: T.String(),
  approval: T.Optional(T.Object({ tool_call_id: T.String(), approved: T.Boolean() })),
  pool: T.Union([T.Literal('agent'), T.Literal('subagent')]),
  parent: T.Optional(T.Object({ id: T.String(), depth: T.Integer() })),
  delegation_depth: T.Optional(T.Integer({ minimum: 0 })),
  /** Continue a suspended turn (AGENT_DELEGATE_MODE=suspend): no new user message. */
  resume: T.Optional(T.Boolean()),
  /** A sub-agent turn of a suspended parent: where its reply goes when it ends. */
  resume_to: T.Optional(
    T.Object({
      chat_id: T.String(),
      tool_call_id: T.String(),
      channel_id: T.Union([T.String(), T.Null()]),
      user_id: T.String(),
    }),
  ),
  /** The sender's span as a W3C traceparent (tracing on only): the turn's span is its child. */
  traceparent: T.Optional(T.String({ maxLength: 64 })),
})
export type ChatTurn = Static<typeof ChatTurn>

/**
 * The turn a chat actor runs, as its state keeps it (ACTOR_STATE `chat.<chat id>`, field
 * `running`): here, with the protocol, because a reader outside the actor (the chat owner's
 * cancel, src/chats/running-turn.ts) reads it and imports no behaviour. `local`: started in a
 * worker of the actor's host, so no queue message brings it back if that worker dies.
 */
export const ChatRunningTurn = T.Object({
  job_id: T.String(),
  started_ms: T.Number(),
  local: T.Optional(T.Boolean()),
})
export type ChatRunningTurn = Static<typeof ChatRunningTurn>

export const chatProtocol = {
  type: 'chat',
  partitions: 64,
  messages: {
    send: ChatTurn,
    /** `message_count`: the chat's count after the turn, when the turn was its only writer since its read. */
    ended: T.Object(
      { job_id: T.String(), message_count: T.Optional(T.Integer({ minimum: 0 })) },
      { additionalProperties: false },
    ),
  },
} as const satisfies ActorProtocol
