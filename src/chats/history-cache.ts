import type { ChatRow, ChatStore, HistoryMessage } from './store.ts'

/*
 * The history of the chats whose turns this worker ran, kept between their turns: a chat's next
 * turn (which its chat actor most often starts in this same process) then reads the chat row and
 * only the messages added since — one small query instead of its last MAX_HISTORY_MESSAGES messages
 * (a 100-message history cost Postgres ~3× the CPU of the row alone, and the worker their parsing).
 *
 * Postgres stays the truth: `chats.message_count` moves with every insert, so what is held plus
 * what was read must add up to it. They do not when this worker missed a message that sorts before
 * what it holds (`seq` comes from a sequence, not in commit order) or one was deleted: the whole
 * history is read then, as without the cache. Bounded to `maxChats` chats, least recently used first out.
 */
export interface Held {
  /** chats.message_count that `messages` (the last `limit` of them) account for. */
  count: number
  messages: HistoryMessage[]
}

/** The turn's read: the chat and its last `limit` messages; `held` is what a turn's writes extend (`extend`). */
export interface TurnContext {
  chat: ChatRow
  history: HistoryMessage[]
  held: Held
}

export interface HistoryCache {
  /** The chat and its last `limit` messages, from what is held plus one small query, or read whole. */
  read(chatId: string, limit: number): Promise<TurnContext | null>
  /**
   * A turn that read (or last extended) `from` wrote `rows`, in order: held next to the rest, unless
   * the chat's entry changed meanwhile. Returns what is held now, for the turn's next write.
   */
  extend(chatId: string, from: Held, rows: readonly HistoryMessage[], limit: number): Held
  /** Forgets a chat (a write whose outcome is unknown). */
  drop(chatId: string): void
}

export function historyCache(store: Pick<ChatStore, 'turnContext'>, maxChats: number): HistoryCache {
  const held = new Map<string, Held>()
  const keep = (chatId: string, h: Held): void => {
    if (maxChats === 0) return
    held.delete(chatId)
    held.set(chatId, h)
    if (held.size > maxChats) held.delete(held.keys().next().value as string)
  }
  const readWhole = async (chatId: string, limit: number): Promise<TurnContext | null> => {
    const row = await store.turnContext(chatId, limit)
    if (row === null) {
      held.delete(chatId)
      return null
    }
    const { history, message_count, ...chat } = row
    const h: Held = { count: message_count, messages: history }
    keep(chatId, h)
    return { chat, history, held: h }
  }
  return {
    async read(chatId, limit) {
      const h = held.get(chatId)
      if (h === undefined) return readWhole(chatId, limit)
      const row = await store.turnContext(chatId, limit, h.messages.at(-1)?.seq ?? 0)
      if (row === null) {
        held.delete(chatId)
        return null
      }
      const { history: added, message_count, ...chat } = row
      // something was missed (written out of seq order, or deleted): read it all
      if (h.count + added.length !== message_count) return readWhole(chatId, limit)
      const history = added.length === 0 ? h.messages : [...h.messages, ...added].slice(-limit)
      const next: Held = { count: message_count, messages: history }
      keep(chatId, next)
      return { chat, history, held: next }
    },
    extend(chatId, from, rows, limit) {
      if (held.get(chatId) !== from || rows.length === 0) return from
      const next: Held = { count: from.count + rows.length, messages: [...from.messages, ...rows].slice(-limit) }
      keep(chatId, next)
      return next
    },
    drop(chatId) {
      held.delete(chatId)
    },
  }
}
