import type { Logger } from '../kernel/log.ts'
import type { Db } from '../platform/db.ts'
import { chatStore } from './store.ts'

/**
 * Ephemeral chats (`expires_in`) are hard-deleted with their messages, swept every
 * CHAT_EXPIRY_SWEEP_SECONDS by each process with the resources role (the delete is idempotent).
 * Returns the stop function.
 */
export function startExpiredChatSweep(d: { db: Db; log: Logger }, everyMs = 60_000): () => Promise<void> {
  const timer = setInterval(() => {
    chatStore(d.db)
      .deleteExpired()
      .catch((err: unknown) => d.log.warn({ err }, 'deleting expired chats failed'))
  }, everyMs)
  timer.unref()
  return async () => clearInterval(timer)
}
