import { sql, type Db } from '../platform/db.ts'
import type { UsageEntry } from './entry.ts'

/**
 * Records usage that has no chat write to ride with (the OpenAI adapter's provider models): one
 * call of `usage_record` (migrations/0040-usage.sql). A turn's usage goes with its messages
 * instead, in the same call (src/chats/store.ts `appendMany`).
 */
export async function recordUsage(db: Db, entry: UsageEntry): Promise<void> {
  if (entry.calls === 0) return
  await db.query(sql.unsafe`select usage_record(${JSON.stringify(entry)}::jsonb)`)
}
