import { Type as T } from '@sinclair/typebox'
import { AppError } from '../kernel/errors.ts'
import { sql, type Db } from '../platform/db.ts'
import { maybeRow, rowType } from '../platform/typed-rows.ts'
import { nextUtcMidnight, utcDay } from './day.ts'

const SpentRows = rowType(T.Object({ total_tokens: T.Number() }, { title: 'usage_user_day' }))

/**
 * The verdict on a user's day: null while `spent` is under `budget` (or there is no budget,
 * 0), else the 429 `usage.daily_budget_exhausted`, naming the budget and when it resets (the next
 * 00:00 UTC), with `Retry-After` in seconds until then. Pure: the day boundary is tested with a
 * given clock.
 */
export function budgetVerdict(spent: number, budget: number, now: Date): AppError | null {
  if (budget <= 0 || spent < budget) return null
  return budgetExhausted(
    `the daily token budget of ${String(budget)} tokens is used up (${String(spent)} spent on ${utcDay(now)} UTC); it resets at ${nextUtcMidnight(now).toISOString()}`,
    now,
  )
}

/**
 * The 429 `usage.daily_budget_exhausted` with `detail` and `Retry-After`: the seconds until the
 * next 00:00 UTC. Also how a turn refused when it started is answered to a caller waiting for it
 * (src/chats/service.ts `result`: the job's error carries the code and detail, not the header).
 */
export function budgetExhausted(detail: string, now: Date): AppError {
  const reset = nextUtcMidnight(now)
  const err = AppError.of('usage.daily_budget_exhausted', detail)
  err.headers = { 'retry-after': String(Math.max(1, Math.ceil((reset.getTime() - now.getTime()) / 1000))) }
  return err
}

export interface DailyBudget {
  /** Throws the 429 when the user's tokens today (UTC) reached the budget; no read when there is no budget. */
  check(userId: string): Promise<void>
}

/**
 * The daily token budget (USAGE_DAILY_TOKEN_BUDGET), checked against `usage_user_day`: one
 * primary-key read. Checked at the door (a chat message, the adapter's completions) and again when
 * a turn starts (src/chats/run-turn.ts), so queued messages, schedules and agent runs through jobs
 * are held to it too. Tokens of a turn already running are not cut off: a day may end somewhat
 * over its budget, by at most the turns that started before it was reached.
 */
export function dailyBudget(db: Db, budget: number, clock: () => Date = () => new Date()): DailyBudget {
  return {
    async check(userId) {
      if (budget <= 0) return
      const now = clock()
      const row = await maybeRow(
        db,
        SpentRows,
        sql.unsafe`select total_tokens::float8 as total_tokens from usage_user_day where user_id = ${userId}::uuid and day = ${utcDay(now)}::date`,
      )
      const err = budgetVerdict(row?.total_tokens ?? 0, budget, now)
      if (err !== null) throw err
    },
  }
}
