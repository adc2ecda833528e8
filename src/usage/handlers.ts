import { USAGE_DIMENSIONS, type UsageDimension } from '../../schemas/usage.ts'
import { bind, type BoundRoute } from '../api/bind.ts'
import { can } from '../auth/principal.ts'
import { permissionSet } from '../feature/permissions.ts'
import { forbidden, invalid } from '../kernel/errors.ts'
import type { Db } from '../platform/db.ts'
import { daysBetween, parseDay, utcDay } from './day.ts'
import { usageReport } from './report.ts'
import { USAGE_ROUTES as R } from './routes.ts'

/** The permissions this module checks, for the reference (its feature contributes the list). */
export const usagePermissions = permissionSet()

const USAGE_READ_ALL = usagePermissions.add(
  'platform.usage.read:all',
  "Usage: read every user's token usage and reported cost (admin); without it, a user reads their own",
)

/** The longest range one report covers, in days (a year, leap day included). */
export const MAX_RANGE_DAYS = 366
const DEFAULT_RANGE_DAYS = 30

/**
 * `GET /api/v1/usage`. Every authenticated user reads their own usage; naming another user's
 * `user_id` without `platform.usage.read:all` is 403 (not an empty answer: the caller learns
 * the filter is not theirs to use, rather than that the user spent nothing). Admins read everyone's,
 * or one user's with `user_id`. A range that is not a calendar date, runs backwards or spans more
 * than MAX_RANGE_DAYS is 422.
 */
export function usageHandlers(d: { db: Db; clock?: () => Date }): BoundRoute[] {
  const clock = d.clock ?? (() => new Date())
  return [
    bind(R.report, async ({ principal: p, query }) => {
      const all = can(p, USAGE_READ_ALL)
      if (!all && query.user_id !== undefined && query.user_id.toLowerCase() !== p.userId.toLowerCase())
        throw forbidden(`reading another user's usage requires ${USAGE_READ_ALL}`)
      const to = query.to ?? utcDay(clock())
      const toDate = parseDay(to)
      if (toDate === null) throw invalid(`to: ${to} is not a calendar date`, [{ path: '/to', message: 'not a date' }])
      const from = query.from ?? utcDay(new Date(toDate.getTime() - (DEFAULT_RANGE_DAYS - 1) * 86_400_000))
      const fromDate = parseDay(from)
      if (fromDate === null)
        throw invalid(`from: ${from} is not a calendar date`, [{ path: '/from', message: 'not a date' }])
      const span = daysBetween(fromDate, toDate)
      if (span < 0) throw invalid(`from (${from}) is after to (${to})`, [{ path: '/from', message: 'after to' }])
      if (span + 1 > MAX_RANGE_DAYS)
        throw invalid(`the range ${from}..${to} spans ${String(span + 1)} days; at most ${String(MAX_RANGE_DAYS)}`, [
          { path: '/from', message: `more than ${String(MAX_RANGE_DAYS)} days before to` },
        ])
      const groupBy = groupByOf(query.group_by)
      return {
        body: await usageReport(d.db, {
          from,
          to,
          userId: all ? query.user_id : p.userId,
          agent: query.agent,
          provider: query.provider,
          model: query.model,
          groupBy,
        }),
      }
    }),
  ]
}

/** `group_by` (checked by the route's pattern) as dimensions in their fixed order, each once. */
function groupByOf(given: string | undefined): UsageDimension[] {
  if (given === undefined) return [...USAGE_DIMENSIONS]
  const asked = new Set(given.split(','))
  return USAGE_DIMENSIONS.filter((d) => asked.has(d))
}
