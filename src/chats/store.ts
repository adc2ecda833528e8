import { randomUUID } from 'node:crypto'
import { Type as T, type Static } from '@sinclair/typebox'
import { sql, type Db } from '../platform/db.ts'
import { anyRows, maybeRow, oneRow, rowType } from '../platform/typed-rows.ts'
import { toStorable, toStorableText } from '../kernel/storable-text.ts'
import type { UsageEntry } from '../usage/entry.ts'
import { Approval, ChatRow, MessageRecord, type ToolCall } from '../../schemas/chat.ts'

/*
 * Chats and messages in Postgres (the source of truth; the chat actor only orders the work). The
 * row shapes are schemas/chat.ts's.
 */
export type { ChatRow }
/** A stored message: the API's message record. */
export type MessageRow = MessageRecord
/** A tool call of a stored assistant message. */
export type ToolCallRecord = ToolCall
export type ApprovalRow = Approval

const CHAT = sql.unsafe`id, user_id, agent_id, agent_namespace, agent_name, title, input, archived, session_key, expires_at, active_channel_id, internal, created_at, updated_at, last_message_at`
const MESSAGE = sql.unsafe`id, chat_id, role, content, tool_calls, tool_call_id, name, created_at`

/* Rows as they come back: timestamps already ISO strings, jsonb parsed (src/platform/db.ts). */
const ChatRows = rowType(T.Object(ChatRow.properties, { title: 'chat' }))
const MessageRows = rowType(MessageRecord)
/** A stored message with its place in the chat (`seq`: increasing, but not in commit order). */
const HistoryMessage = T.Object({ ...MessageRecord.properties, seq: T.Integer() }, { title: 'chat message with seq' })
export type HistoryMessage = Static<typeof HistoryMessage>
const TurnContextRow = T.Object(
  { ...ChatRow.properties, message_count: T.Integer(), history: T.Array(HistoryMessage) },
  { title: 'chat with history' },
)
export type TurnContextRow = Static<typeof TurnContextRow>
const TurnContextRows = rowType(TurnContextRow)
/** What a turn's write returns: the rows it added, and the chat's message count after it (null: the chat is gone). */
const AppendedRow = T.Object(
  { message_count: T.Union([T.Integer(), T.Null()]), rows: T.Array(HistoryMessage) },
  { title: 'appended messages' },
)
export type Appended = Static<typeof AppendedRow>
const AppendedRows = rowType(AppendedRow)
const ApprovalRows = rowType(T.Object(Approval.properties, { title: 'chat approval' }))
const DecidedApprovalRows = rowType(
  T.Object(
    { ...Approval.properties, status: T.Union([T.Literal('pending'), T.Literal('approved'), T.Literal('rejected')]) },
    { title: 'chat approval' },
  ),
)

/** A message to store; `id` given makes the insert idempotent (the user message of a turn has its job's id). */
export interface NewMessage {
  id?: string
  role: MessageRow['role']
  content: string | null
  tool_calls?: ToolCallRecord[] | null
  tool_call_id?: string | null
  name?: string | null
}

/** A message whose text Postgres can store: NUL and lone surrogates (from an LLM or a tool) become U+FFFD. */
function storableMessage<
  M extends {
    content: string | null
    tool_calls?: ToolCallRecord[] | null
    tool_call_id?: string | null
    name?: string | null
  },
>(m: M): M {
  return {
    ...m,
    content: m.content === null ? null : toStorableText(m.content),
    ...(m.tool_calls === undefined || m.tool_calls === null
      ? {}
      : { tool_calls: toStorable(m.tool_calls) as ToolCallRecord[] }),
    ...(m.tool_call_id === undefined || m.tool_call_id === null
      ? {}
      : { tool_call_id: toStorableText(m.tool_call_id) }),
    ...(m.name === undefined || m.name === null ? {} : { name: toStorableText(m.name) }),
  }
}

/** Messages as one JSON array parameter, each in the shape the SQL side unpacks (`jsonb_to_record`). */
const packedMessages = (given: readonly NewMessage[]): string =>
  JSON.stringify(
    given.map((g) => {
      const m = storableMessage(g)
      return {
        id: m.id ?? null,
        role: m.role,
        content: m.content,
        tool_calls: m.tool_calls ?? null,
        tool_call_id: m.tool_call_id ?? null,
        name: m.name ?? null,
      }
    }),
  )

const expiresAt = (seconds: number | null | undefined): string | null =>
  seconds === undefined || seconds === null ? null : new Date(Date.now() + seconds * 1000).toISOString()

export function chatStore(db: Db) {
  return {
    /**
     * A new chat; with `messages` (earlier messages), the chat and those messages in one
     * statement: one round trip and one commit instead of two.
     */
    async create(c: {
      userId: string
      agent: { id: string; namespace: string; name: string }
      input: Record<string, unknown>
      title?: string | null
      expiresIn?: number | null
      sessionKey?: string | null
      messages?: readonly NewMessage[]
    }): Promise<ChatRow> {
      const messages = c.messages ?? []
      if (messages.length === 0) {
        return oneRow(
          db,
          ChatRows,
          sql.unsafe`
          insert into chats (user_id, agent_id, agent_namespace, agent_name, title, input, expires_at, session_key)
          values (${c.userId}::uuid, ${c.agent.id}::uuid, ${c.agent.namespace}, ${c.agent.name}, ${c.title ?? null}, ${JSON.stringify(c.input)}::jsonb,
                  ${expiresAt(c.expiresIn)}::timestamptz, ${c.sessionKey ?? null})
          returning ${CHAT}`,
        )
      }
      return oneRow(
        db,
        ChatRows,
        sql.unsafe`
        select ${CHAT} from chat_create_with_messages(${c.userId}::uuid, ${c.agent.id}::uuid, ${c.agent.namespace}, ${c.agent.name}, ${c.title ?? null},
          ${JSON.stringify(c.input)}::jsonb, ${expiresAt(c.expiresIn)}::timestamptz, ${c.sessionKey ?? null}, false, ${packedMessages(messages)}::jsonb)`,
      )
    },
    /**
     * An internal chat (the adapter's per agent request with the request's earlier messages, a
     * sub-agent's) in one statement, committed without a flush of its own (migrations/0023); with
     * the history as its first turn reads it, which its creator hands to that turn
     * (src/chats/history-cache.ts `seedChat`) so that the turn reads nothing.
     */
    async createInternal(c: {
      userId: string
      agent: { id: string; namespace: string; name: string }
      input: Record<string, unknown>
      expiresIn: number
      messages?: readonly NewMessage[]
    }): Promise<{ chat: ChatRow; history: HistoryMessage[] }> {
      const messages = (c.messages ?? []).map((m) => storableMessage({ ...m, id: m.id ?? randomUUID() }))
      // a function whose statement's plan Postgres keeps (migrations/0022-chat-context-functions.sql)
      const chat = await oneRow(
        db,
        ChatRows,
        sql.unsafe`
        select ${CHAT} from chat_create_with_messages(${c.userId}::uuid, ${c.agent.id}::uuid, ${c.agent.namespace}, ${c.agent.name}, null,
          ${JSON.stringify(c.input)}::jsonb, ${expiresAt(c.expiresIn)}::timestamptz, null, true, ${packedMessages(messages)}::jsonb)`,
      )
      // seq 0: unknown here, and only a later incremental read would use it (it then reads whole)
      const history = messages.map((m) => ({
        id: m.id ?? '',
        chat_id: chat.id,
        role: m.role,
        content: m.content,
        tool_calls: m.tool_calls ?? null,
        tool_call_id: m.tool_call_id ?? null,
        name: m.name ?? null,
        created_at: chat.created_at,
        seq: 0,
      }))
      return { chat, history }
    },
    async get(id: string): Promise<ChatRow | null> {
      if (!/^[0-9a-f-]{36}$/i.test(id)) return null
      return maybeRow(
        db,
        ChatRows,
        sql.unsafe`select ${CHAT} from chats where id = ${id}::uuid and (expires_at is null or expires_at > now())`,
      )
    },
    /**
     * What a turn needs from Postgres in one round trip: the chat, how many messages it holds, and
     * its last `limit` messages (oldest first) — only those after `afterSeq` when given (what a
     * worker that holds the rest still lacks, src/chats/history-cache.ts). Timestamps are formatted
     * as the row parser formats them (ISO, UTC, `Z`).
     */
    async turnContext(id: string, limit: number, afterSeq?: number): Promise<TurnContextRow | null> {
      if (!/^[0-9a-f-]{36}$/i.test(id)) return null
      // a function whose statement's plan Postgres keeps (migrations/0022-chat-context-functions.sql); seq starts at 1
      return maybeRow(
        db,
        TurnContextRows,
        sql.unsafe`select * from chat_turn_context(${id}::uuid, ${limit}::integer, ${afterSeq ?? 0}::bigint)`,
      )
    },
    /**
     * The live chat of a session (user, agent, session_key), made now when there is none; `created`
     * says which. Concurrent first calls with one new key all get the same chat: the insert leaves
     * the row another call committed to the unique index (`chats_session`, migrations/0006), and
     * the select that follows, a statement of its own, sees it (read committed). Should that chat
     * be archived in between (a reset), the insert is tried again.
     */
    async openSession(c: {
      userId: string
      agent: { id: string; namespace: string; name: string }
      input: Record<string, unknown>
      sessionKey: string
    }): Promise<{ chat: ChatRow; created: boolean }> {
      for (;;) {
        const made = await maybeRow(
          db,
          ChatRows,
          sql.unsafe`
          insert into chats (user_id, agent_id, agent_namespace, agent_name, input, session_key)
          values (${c.userId}::uuid, ${c.agent.id}::uuid, ${c.agent.namespace}, ${c.agent.name}, ${JSON.stringify(c.input)}::jsonb, ${c.sessionKey})
          on conflict (user_id, agent_namespace, agent_name, session_key) where session_key is not null and not archived do nothing
          returning ${CHAT}`,
        )
        if (made !== null) return { chat: made, created: true }
        const found = await maybeRow(
          db,
          ChatRows,
          sql.unsafe`
          select ${CHAT} from chats where user_id = ${c.userId}::uuid and agent_namespace = ${c.agent.namespace} and agent_name = ${c.agent.name}
            and session_key = ${c.sessionKey} and not archived`,
        )
        if (found !== null) return { chat: found, created: false }
      }
    },
    async bySession(userId: string, ns: string, name: string, key: string): Promise<ChatRow | null> {
      return maybeRow(
        db,
        ChatRows,
        sql.unsafe`
        select ${CHAT} from chats where user_id = ${userId}::uuid and agent_namespace = ${ns} and agent_name = ${name}
          and session_key = ${key} and not archived and (expires_at is null or expires_at > now())`,
      )
    },
    async list(
      userId: string | null,
      o: { includeArchived: boolean; limit: number; offset: number },
    ): Promise<ChatRow[]> {
      return anyRows(
        db,
        ChatRows,
        sql.unsafe`
        select ${CHAT} from chats
        where not internal and (expires_at is null or expires_at > now())
          ${userId === null ? sql.unsafe`` : sql.unsafe`and user_id = ${userId}::uuid`}
          ${o.includeArchived ? sql.unsafe`` : sql.unsafe`and not archived`}
        order by coalesce(last_message_at, created_at) desc limit ${o.limit} offset ${o.offset}`,
      )
    },
    async update(id: string, patch: { archived?: boolean; title?: string | null }): Promise<ChatRow | null> {
      return maybeRow(
        db,
        ChatRows,
        sql.unsafe`
        update chats set
          archived = coalesce(${patch.archived ?? null}::boolean, archived),
          title = case when ${patch.title !== undefined} then ${patch.title ?? null} else title end,
          updated_at = now()
        where id = ${id}::uuid returning ${CHAT}`,
      )
    },
    async remove(id: string): Promise<boolean> {
      return (await db.query(sql.unsafe`delete from chats where id = ${id}::uuid`)).rowCount > 0
    },
    async setChannel(id: string, channelId: string | null): Promise<void> {
      await db.query(
        sql.unsafe`update chats set active_channel_id = ${channelId}, updated_at = now() where id = ${id}::uuid`,
      )
    },
    async messages(chatId: string, limit?: number): Promise<MessageRow[]> {
      return limit === undefined
        ? anyRows(
            db,
            MessageRows,
            sql.unsafe`select ${MESSAGE} from chat_messages where chat_id = ${chatId}::uuid order by seq`,
          )
        : anyRows(
            db,
            MessageRows,
            sql.unsafe`select * from (select ${MESSAGE}, seq from chat_messages where chat_id = ${chatId}::uuid order by seq desc limit ${limit}) m order by seq`,
          )
    },
    async append(
      chatId: string,
      given: {
        role: MessageRow['role']
        content: string | null
        tool_calls?: ToolCallRecord[] | null
        tool_call_id?: string | null
        name?: string | null
      },
    ): Promise<MessageRow> {
      // LLM output is not the caller's input (the gateway rejects that): a NUL or lone surrogate
      // in it is replaced by U+FFFD so the turn is stored instead of failing (kernel/storable-text.ts)
      const m = storableMessage(given)
      return oneRow(
        db,
        MessageRows,
        sql.unsafe`
        with m as (
          insert into chat_messages (chat_id, role, content, tool_calls, tool_call_id, name)
          values (${chatId}::uuid, ${m.role}, ${m.content}, ${m.tool_calls === undefined || m.tool_calls === null ? null : JSON.stringify(m.tool_calls)}::jsonb, ${m.tool_call_id ?? null}, ${m.name ?? null})
          returning ${MESSAGE}
        ), c as (update chats set last_message_at = now(), updated_at = now(), message_count = message_count + 1 where id = ${chatId}::uuid)
        select * from m`,
      )
    },
    /**
     * Several messages in one round trip, in the order given (a turn's user message, tool calls,
     * tool results and reply). A message whose `id` is stored already is skipped (idempotent).
     * Returns the rows written, with their `seq`, and the chat's message count after the write —
     * what the worker's history cache checks itself against; null when the chat is gone (deleted,
     * expired), in which case nothing is written.
     */
    /**
     * Writes a turn's messages and, given one, the usage of its LLM calls since its last write, in
     * one call (one transaction: migrations/0040-usage.sql `chat_append_turn`, the daily rollups).
     */
    async appendMany(chatId: string, given: readonly NewMessage[], usage?: UsageEntry | null): Promise<Appended> {
      // every turn makes this call: a function whose statement's plan Postgres keeps per session
      // (migrations/0020-chat-append-function.sql), not the statement planned again each time
      if (usage !== undefined && usage !== null && usage.calls > 0)
        return oneRow(
          db,
          AppendedRows,
          sql.unsafe`select o_count as message_count, o_rows as rows from chat_append_turn(${chatId}::uuid, ${packedMessages(given)}::jsonb, ${JSON.stringify(usage)}::jsonb)`,
        )
      return oneRow(
        db,
        AppendedRows,
        sql.unsafe`select o_count as message_count, o_rows as rows from chat_append_messages(${chatId}::uuid, ${packedMessages(given)}::jsonb)`,
      )
    },
    async pendingApprovals(chatId: string): Promise<ApprovalRow[]> {
      return anyRows(
        db,
        ApprovalRows,
        sql.unsafe`select tool_call_id, function_namespace, function_name, arguments from chat_approvals where chat_id = ${chatId}::uuid and status = 'pending' order by created_at`,
      )
    },
    async addApproval(chatId: string, a: ApprovalRow): Promise<void> {
      await db.query(sql.unsafe`insert into chat_approvals (chat_id, tool_call_id, function_namespace, function_name, arguments)
        values (${chatId}::uuid, ${toStorableText(a.tool_call_id)}, ${a.function_namespace}, ${a.function_name}, ${JSON.stringify(toStorable(a.arguments))}::jsonb) on conflict do nothing`)
    },
    /** Decides a pending approval; false when there is none (already decided or unknown). */
    async decide(chatId: string, toolCallId: string, approved: boolean): Promise<boolean> {
      const r = await db.query(
        sql.unsafe`update chat_approvals set status = ${approved ? 'approved' : 'rejected'} where chat_id = ${chatId}::uuid and tool_call_id = ${toolCallId} and status = 'pending'`,
      )
      return r.rowCount > 0
    },
    async approval(
      chatId: string,
      toolCallId: string,
    ): Promise<(ApprovalRow & { status: 'pending' | 'approved' | 'rejected' }) | null> {
      return maybeRow(
        db,
        DecidedApprovalRows,
        sql.unsafe`select tool_call_id, function_namespace, function_name, arguments, status from chat_approvals where chat_id = ${chatId}::uuid and tool_call_id = ${toolCallId}`,
      )
    },
    /** Hard-deletes expired chats with their messages (ephemeral chats). */
    async deleteExpired(): Promise<number> {
      return (await db.query(sql.unsafe`delete from chats where expires_at is not null and expires_at <= now()`))
        .rowCount
    },
  }
}

export type ChatStore = ReturnType<typeof chatStore>
