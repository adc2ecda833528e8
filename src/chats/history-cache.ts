import type { ChatRow, ChatStore, HistoryMessage } from './store.ts'

/*
 * The history of the chats whose turns this worker ran, kept between their turns: a chat's next
 * turn (which its chat actor most often starts in this same process) needs no read at all when its
 * chat actor vouches for the message count this worker holds, and otherwise reads the chat row and
 * only the messages added since — one small query instead of its last MAX_HISTORY_MESSAGES
 * messages (a 100-message history cost Postgres ~3× the CPU of the row alone, and the worker their
 * parsing).
 *
 * Postgres stays the truth: `chats.message_count` moves with every insert, under the chat row's
 * lock, so one count is one set of messages. What is held plus what was read must add up to it;
 * they do not when this worker missed a message that sorts before what it holds (`seq` comes from
 * a sequence, not in commit order) or one was deleted: the whole history is read then, as without
 * the cache. A turn's write returns the count after it: held only when it is what was held plus
 * what was written (nobody else wrote meanwhile).
 *
 * The count a chat actor vouches for (`known`) is the one the chat's last turn ended with, when
 * that turn's writes were the chat's only ones since its read (actors/chat/actor.ts clears it
 * whenever a message may have been written outside a turn: a sub-agent's answer, a turn that did
 * not report). What a turn uses of the chat row never changes (its owner, agent and input; an
 * expiry is checked here, a deletion by the turn's first write, which then writes nothing).
 * Bounded to `maxChats` chats, least recently used first out.
 */
export interface Held {
  /** chats.message_count that `history` (the last `limit` messages) accounts for. */
  count: number
  history: HistoryMessage[]
  /** The chat row as last read. */
  chat: ChatRow
}

export interface HistoryCache {
  /**
   * The chat and its last `limit` messages — what a turn's writes then extend (`extend`): from
   * memory when `known` (the count the chat's actor vouches for) is what is held, else from what
   * is held plus one small query, or read whole.
   */
  read(chatId: string, limit: number, known?: number): Promise<Held | null>
  /**
   * A turn that read (or last extended) `from` wrote `rows`, in order, after which the chat held
   * `count` messages. Returns what the turn's view now accounts for — held for the chat's next
   * turn unless the entry changed meanwhile — or null when someone else wrote too (the entry is
   * dropped: the next turn reads).
   */
  extend(chatId: string, from: Held, rows: readonly HistoryMessage[], limit: number, count: number): Held | null
  /** Forgets a chat (a write whose outcome is unknown). */
  drop(chatId: string): void
}

/*
 * Chats created in this process and handed to their first turn with what was written (`seedChat`):
 * an internal chat (the adapter's per agent request, a sub-agent's) is created by the code that
 * then sends its first turn, which the chat's actor most often starts in this same process. Its
 * creator knows the chat and its messages exactly (nobody else knows the chat's id yet), so that
 * turn reads nothing. Process-wide (any worker of the process may run the turn), taken once,
 * bounded; a turn elsewhere reads as usual.
 */
const seeds = new Map<string, { held: Held; at: number }>()
const SEED_MS = 60_000
const SEEDS_KEPT = 1000

/** Hands a chat just created here, with all its messages, to its first turn in this process. */
export function seedChat(held: Held): void {
  seeds.set(held.chat.id, { held, at: Date.now() })
  if (seeds.size > SEEDS_KEPT) seeds.delete(seeds.keys().next().value as string)
}

/** The seed of a chat, taken (once), when it is fresh and accounts for `known` (when vouched). */
function takeSeed(chatId: string, known: number | undefined): Held | undefined {
  const s = seeds.get(chatId)
  if (s === undefined) return undefined
  seeds.delete(chatId)
  return Date.now() - s.at < SEED_MS && (known === undefined || known === s.held.count) ? s.held : undefined
}

const expired = (chat: ChatRow): boolean => chat.expires_at !== null && Date.parse(chat.expires_at) <= Date.now()

export function historyCache(store: Pick<ChatStore, 'turnContext'>, maxChats: number): HistoryCache {
  const held = new Map<string, Held>()
  const keep = (chatId: string, h: Held): void => {
    if (maxChats === 0) return
    held.delete(chatId)
    held.set(chatId, h)
    if (held.size > maxChats) held.delete(held.keys().next().value as string)
  }
  const readWhole = async (chatId: string, limit: number): Promise<Held | null> => {
    const row = await store.turnContext(chatId, limit)
    if (row === null) {
      held.delete(chatId)
      return null
    }
    const { history, message_count, ...chat } = row
    const h: Held = { count: message_count, history, chat }
    keep(chatId, h)
    return h
  }
  return {
    async read(chatId, limit, known) {
      const h = held.get(chatId)
      if (h === undefined) {
        const seed = takeSeed(chatId, known)
        if (seed === undefined || expired(seed.chat)) return readWhole(chatId, limit)
        const sliced: Held = { ...seed, history: seed.history.slice(-limit) }
        keep(chatId, sliced)
        return sliced
      }
      if (known === h.count && !expired(h.chat)) {
        keep(chatId, h)
        return h
      }
      const row = await store.turnContext(chatId, limit, h.history.at(-1)?.seq ?? 0)
      if (row === null) {
        held.delete(chatId)
        return null
      }
      const { history: added, message_count, ...chat } = row
      // something was missed (written out of seq order, or deleted): read it all
      if (h.count + added.length !== message_count) return readWhole(chatId, limit)
      const next: Held = {
        count: message_count,
        history: added.length === 0 ? h.history : [...h.history, ...added].slice(-limit),
        chat,
      }
      keep(chatId, next)
      return next
    },
    extend(chatId, from, rows, limit, count) {
      if (count !== from.count + rows.length) {
        held.delete(chatId)
        return null
      }
      if (rows.length === 0) return from
      const next: Held = { count, history: [...from.history, ...rows].slice(-limit), chat: from.chat }
      if (held.get(chatId) === from) keep(chatId, next)
      return next
    },
    drop(chatId) {
      held.delete(chatId)
    },
  }
}
