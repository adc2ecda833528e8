import { Type as T } from '@sinclair/typebox'
import type { Logger } from '../kernel/log.ts'
import { sql, type Db } from '../platform/db.ts'
import { oneRow, rowType } from '../platform/typed-rows.ts'

/*
 * TOOL_RESULT_RETENTION_DAYS: stored tool results (chat messages of role `tool`) older than that
 * are swept — their content replaced by the marker below (migrations/0027-tool-result-retention.sql).
 * The rows stay: the assistant's tool call keeps an answer (providers refuse a call without its
 * result), the chat's message count and order do not change. Every process with the resources
 * role sweeps (hourly, and once a minute after it starts); the update is idempotent, so no leader
 * is needed. A worker's in-memory history (src/chats/history-cache.ts) may still hold a result it
 * read before the sweep until it reads that chat whole again; such an old result is past the last
 * TOOL_RESULT_MAX_INLINE anyway in any chat that kept going.
 */

/** The content a swept tool result is left with (the same text as in the migration). */
export const SWEPT_TOOL_RESULT = '{"_expired":true,"note":"removed after TOOL_RESULT_RETENTION_DAYS"}'

const BATCH = 1000
const Swept = rowType(T.Object({ n: T.Integer() }, { title: 'swept tool results' }))

/** Sweeps every tool result older than `days` days, in batches; returns how many were swept. */
export async function sweepToolResults(db: Db, days: number): Promise<number> {
  let total = 0
  for (;;) {
    // a function whose statement's plan matches the partial index of unswept results
    const { n } = await oneRow(
      db,
      Swept,
      sql.unsafe`select chat_sweep_tool_results(${days}::integer, ${BATCH}::integer) as n`,
    )
    total += n
    if (n < BATCH) return total
  }
}

/** Starts the periodic sweep; returns the stop function. */
export function startToolResultSweep(
  d: { db: Db; log: Logger; days: number },
  everyMs = 3_600_000,
  firstMs = 60_000,
): () => Promise<void> {
  let running: Promise<void> | null = null
  const sweep = async () => {
    try {
      const n = await sweepToolResults(d.db, d.days)
      if (n > 0) d.log.info({ swept: n, days: d.days }, 'old tool results swept')
    } catch (err) {
      d.log.warn({ err }, 'sweeping old tool results failed')
    }
  }
  const once = () => {
    if (running !== null) return
    running = sweep().finally(() => {
      running = null
    })
  }
  const first = setTimeout(once, firstMs)
  first.unref()
  const timer = setInterval(once, everyMs)
  timer.unref()
  return async () => {
    clearTimeout(first)
    clearInterval(timer)
    await running
  }
}
