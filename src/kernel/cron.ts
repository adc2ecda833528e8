import { Cron } from 'croner'
import { invalid } from './errors.ts'

/*
 * Next fire times of a cron expression in an IANA time zone, computed with croner (paused: it
 * never arms a timer of its own — the schedule actor's timer fires, see actors/schedule/). Pure:
 * the actor and the service (`next_run`) compute the same times.
 *
 * DST follows croner (Vixie cron): a fixed-time job (one value in each of seconds, minutes, hours)
 * whose time falls into a spring-forward gap runs at the first valid time after the gap, and runs
 * once when its time occurs twice (fall back); an interval job (`*`, steps, ranges, lists) skips
 * times in the gap and runs at both occurrences of a repeated time (they are different instants).
 */
/**
 * A parsed expression, and the last next-tick asked of it. croner's `nextRun` is most of a
 * schedule fire's CPU (~70 µs), and the schedules sharing an expression ask it for the same tick
 * when they fire together (every `0 * * * *` at the hour): the first computes it, the others reuse.
 */
interface Parsed {
  cron: Cron
  lastAfter: number
  lastNext: number | null
}
const cache = new Map<string, Parsed>()

/** 5 fields (minute precision) or 6 with seconds first; no year field. */
function parsedOf(expression: string, timezone: string): Parsed {
  const k = `${timezone}\u0000${expression}`
  let c = cache.get(k)
  if (c === undefined) {
    c = {
      cron: new Cron(expression, { timezone, paused: true, mode: '5-or-6-parts' }),
      lastAfter: Number.NaN,
      lastNext: null,
    }
    if (cache.size > 5000) cache.clear()
    cache.set(k, c)
  }
  return c
}

const cronOf = (expression: string, timezone: string): Cron => parsedOf(expression, timezone).cron

export function isTimeZone(tz: string): boolean {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: tz }).resolvedOptions().timeZone !== ''
  } catch {
    return false
  }
}

/** Refuses an expression or zone croner cannot use (422 with the reason), before anything is stored. */
export function checkCron(expression: string, timezone: string): void {
  if (!isTimeZone(timezone))
    throw invalid(
      `unknown time zone ${JSON.stringify(timezone)} (use an IANA name such as Europe/Berlin)`,
      [{ path: '/timezone', message: 'not an IANA time zone' }],
      'schedule.invalid_timezone',
    )
  try {
    if (cronOf(expression, timezone).nextRun(new Date()) === null) throw new Error('the expression never fires')
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err)
    throw invalid(
      `invalid cron expression: ${message}`,
      [{ path: '/cron_expression', message }],
      'schedule.invalid_cron',
    )
  }
}

/** The first fire time strictly after `afterMs` (epoch ms), or null when there is none. */
export function nextTick(expression: string, timezone: string, afterMs: number): number | null {
  const p = parsedOf(expression, timezone)
  if (p.lastAfter === afterMs) return p.lastNext
  const next = p.cron.nextRun(new Date(afterMs))
  p.lastAfter = afterMs
  p.lastNext = next === null ? null : next.getTime()
  return p.lastNext
}

/**
 * The shortest gap, in seconds, between consecutive fire times among the next `samples` runs (null:
 * fewer than two runs). A cron expression's gaps repeat with its fields, so a burst such as
 * `* * 3 * * *` (every second during hour 3) shows in consecutive runs wherever the sample starts;
 * a sample from now is what a save checks.
 */
export function shortestInterval(expression: string, timezone: string, fromMs: number, samples = 120): number | null {
  const runs = cronOf(expression, timezone).nextRuns(samples, new Date(fromMs))
  let shortest: number | null = null
  for (let i = 1; i < runs.length; i++) {
    const gap = ((runs[i]?.getTime() ?? 0) - (runs[i - 1]?.getTime() ?? 0)) / 1000
    if (shortest === null || gap < shortest) shortest = gap
  }
  return shortest
}

/** Refuses (422 `schedule.interval_too_short`, naming the minimum) an expression firing more often than `minSeconds`. */
export function checkMinInterval(expression: string, timezone: string, minSeconds: number): void {
  const gap = shortestInterval(expression, timezone, Date.now())
  if (gap === null || gap >= minSeconds) return
  const message = `fires every ${String(gap)} s at times; the minimum interval is ${String(minSeconds)} s (SCHEDULE_MIN_INTERVAL_SECONDS)`
  throw invalid(
    `the cron expression fires too often: ${message}`,
    [{ path: '/cron_expression', message }],
    'schedule.interval_too_short',
  )
}
