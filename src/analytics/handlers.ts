import { bind, type BoundRoute } from '../api/bind.ts'
import { can, type Principal } from '../auth/principal.ts'
import { permissionSet } from '../feature/permissions.ts'
import { AppError, forbidden, unavailable } from '../kernel/errors.ts'
import type { Logger } from '../kernel/log.ts'
import { ClickHouseError, type ClickHouseHttp } from './clickhouse-http.ts'
import { listExecutionLogs, listRequestLogs } from './queries.ts'
import { ANALYTICS_ROUTES as R } from './routes.ts'

/** The permissions this module checks, for the reference. */
export const analyticsPermissions = permissionSet()
const REQUEST_LOGS_READ = analyticsPermissions.add(
  'platform.request-logs.read:all',
  'Request logs: read every API request (admin)',
)
const EXECUTION_LOGS_READ = analyticsPermissions.add(
  'platform.execution-logs.read:all',
  'Execution logs: read every finished execution (admin)',
)

const need = (p: Principal, permission: string): void => {
  if (!can(p, permission)) throw forbidden(`requires ${permission}`, 'auth.admin_only')
}

/** `from` after `to` is a range that cannot hold anything: the caller's mistake, said as such. */
function checkRange(q: { from?: string | undefined; to?: string | undefined }): void {
  if (q.from !== undefined && q.to !== undefined && Date.parse(q.from) > Date.parse(q.to))
    throw new AppError(422, 'request.invalid', '`from` is after `to`', {
      issues: [{ path: 'from', message: 'must not be after `to`' }],
    })
}

/**
 * The log pages. `store` is undefined without ANALYTICS_HOST: the pages answer empty (200). A
 * store that fails answers 503 (the log is unavailable, the request was fine).
 */
export function analyticsHandlers(
  store: { ch: ClickHouseHttp; database: string } | undefined,
  log: Logger,
): BoundRoute[] {
  const read = async <T>(what: () => Promise<T>): Promise<T> => {
    try {
      return await what()
    } catch (err) {
      if (!(err instanceof ClickHouseError)) throw err
      log.warn({ err: err.message }, 'analytics store read failed')
      throw unavailable('the analytics store is unavailable right now; retry shortly')
    }
  }
  return [
    bind(R.requestLogs, async ({ principal, query }) => {
      need(principal, REQUEST_LOGS_READ)
      checkRange(query)
      if (store === undefined) return { body: { items: [], total: 0 } }
      return { body: await read(() => listRequestLogs(store.ch, store.database, query)) }
    }),
    bind(R.executionLogs, async ({ principal, query }) => {
      need(principal, EXECUTION_LOGS_READ)
      checkRange(query)
      if (store === undefined) return { body: { items: [], total: 0 } }
      return { body: await read(() => listExecutionLogs(store.ch, store.database, query)) }
    }),
  ]
}
