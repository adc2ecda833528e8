/*
 * The UTC day usage is counted in, and when it ends: pure, so the budget's day boundary is tested
 * with a given clock (tests/usage/day.test.ts) rather than by waiting for midnight.
 */

/** `YYYY-MM-DD` of the UTC day `now` falls in. */
export function utcDay(now: Date): string {
  return now.toISOString().slice(0, 10)
}

/** The start of the next UTC day: when a day's budget resets. */
export function nextUtcMidnight(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1))
}

/** A calendar date `YYYY-MM-DD` that exists (2026-02-30 does not), as its UTC midnight; null otherwise. */
export function parseDay(s: string): Date | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s)
  if (m === null) return null
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])))
  return utcDay(d) === s ? d : null
}

/** Whole days from `a` to `b` (UTC midnights). */
export function daysBetween(a: Date, b: Date): number {
  return Math.round((b.getTime() - a.getTime()) / 86_400_000)
}
