import { randomUUID } from 'node:crypto'
import type { Appended, ChatStore, HistoryMessage, MessageRow, NewMessage } from './store.ts'
import { TurnError } from './turn-error.ts'
import { addCall, type CallUsage, type UsageEntry } from '../usage/entry.ts'

/** A message as the LLM context needs it (a stored row, or one still to be written). */
export type ContextMessage = Pick<MessageRow, 'role' | 'content' | 'tool_calls' | 'tool_call_id'>

/**
 * Told what a flush wrote and the chat's message count after it (the worker's history cache,
 * src/chats/history-cache.ts), or that its outcome is unknown.
 */
export interface WrittenHook {
  written(rows: readonly HistoryMessage[], messageCount: number): void
  unknown(): void
}

/*
 * A turn's view of its chat's messages: the history read once at the start (with the chat, one
 * query) plus what the turn adds, kept in memory so no round re-reads it; what the turn adds is
 * written in as few inserts as its checkpoints allow (`flush`): the user message together with the
 * reply at the end, or with the assistant's tool calls before those run (a sub-agent in suspend
 * mode writes its answer into this chat), and before the turn pauses or fails. The chat actor runs
 * one turn of a chat at a time, so nobody else writes this chat meanwhile.
 */
export class Transcript {
  private readonly store: ChatStore
  private readonly chatId: string
  private readonly all: ContextMessage[]
  private readonly hook: WrittenHook | undefined
  private pending: NewMessage[] = []
  /** The usage of the LLM calls since the last flush, written with it (null: none). */
  private spent: UsageEntry | null = null
  /** What the first write waits for (the turn's claim, when the turn started before it). */
  private before: Promise<void> | undefined

  constructor(
    store: ChatStore,
    chatId: string,
    history: readonly ContextMessage[],
    hook?: WrittenHook,
    before?: Promise<void>,
  ) {
    this.store = store
    this.chatId = chatId
    this.all = [...history]
    this.hook = hook
    this.before = before
  }

  /** Adds a message: part of the context at once, written at the next `flush`. */
  add(m: NewMessage): void {
    // an id of its own: a flush retried after an unclear failure writes nothing twice
    this.pending.push({ ...m, id: m.id ?? randomUUID() })
    this.all.push({
      role: m.role,
      content: m.content,
      tool_calls: m.tool_calls ?? null,
      tool_call_id: m.tool_call_id ?? null,
    })
  }

  /**
   * Counts an LLM call's tokens and reported cost: recorded with the next `flush`, in the same
   * transaction as the messages (the daily rollups, src/usage/). `base` says whose, which agent,
   * provider and model, and which UTC day.
   */
  spend(base: UsageEntry, call: CallUsage): void {
    this.spent = addCall(this.spent ?? base, call)
  }

  /** The last `limit` messages, oldest first. */
  window(limit: number): ContextMessage[] {
    return this.all.slice(-limit)
  }

  /** Writes what was added since the last flush (one insert); returns the rows written. */
  async flush(): Promise<MessageRow[]> {
    if (this.pending.length === 0 && this.spent === null) return []
    if (this.before !== undefined) {
      await this.before
      this.before = undefined
    }
    const batch = this.pending
    const spent = this.spent
    this.pending = []
    this.spent = null
    let out: Appended
    try {
      out = await this.store.appendMany(this.chatId, batch, spent)
    } catch (err) {
      // kept for a later flush (the error path tries once more)
      this.pending = [...batch, ...this.pending]
      if (spent !== null) this.spent = this.spent === null ? spent : mergeSpent(spent, this.spent)
      this.hook?.unknown()
      throw err
    }
    // deleted or expired since the turn began (nothing written): as the turn's read would have found it
    if (out.message_count === null) throw new TurnError('chat.not_found', 'the chat no longer exists')
    const rows = out.rows
    // a retried batch writes only what is missing: the rows returned are what this flush added
    this.hook?.written(rows, out.message_count)
    return rows.map(({ seq: _seq, ...m }) => m)
  }
}

/** Two records of one turn's usage as one (same user, agent, provider, model; `a`'s day). */
function mergeSpent(a: UsageEntry, b: UsageEntry): UsageEntry {
  return {
    ...a,
    prompt_tokens: a.prompt_tokens + b.prompt_tokens,
    completion_tokens: a.completion_tokens + b.completion_tokens,
    total_tokens: a.total_tokens + b.total_tokens,
    cost: a.cost === null && b.cost === null ? null : (a.cost ?? 0) + (b.cost ?? 0),
    calls: a.calls + b.calls,
  }
}
