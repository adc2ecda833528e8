import { defineFeature } from '../feature/define.ts'
import type { Config } from '../kernel/config.ts'
import { clickHouseHttp } from './clickhouse-http.ts'
import { subscribeLogFeeds } from './consumers.ts'
import { analyticsHandlers, analyticsPermissions } from './handlers.ts'
import { analyticsHealthContribution, setProcessAnalyticsWriter } from './health.ts'
import { analyticsRoutes } from './routes.ts'
import { DATABASE_NAME } from './tables.ts'
import { AnalyticsWriter } from './writer.ts'

/*
 * Request and execution logs in ClickHouse (docs/operations.md "Request and execution logs").
 * The gateway publishes request records (gateway/request-log.ts); in the resources role this
 * feature writes them and the final execution events into ClickHouse (writer.ts) and serves the
 * two admin log pages. Without ANALYTICS_HOST nothing is collected and the pages answer empty.
 */
const databaseOf = (c: Config): string => (c.ANALYTICS_DATABASE === '' ? 'platform_logs' : c.ANALYTICS_DATABASE)

export const analyticsFeature = defineFeature({
  name: 'analytics',
  routes: analyticsRoutes,
  permissions: analyticsPermissions.list,
  health: analyticsHealthContribution,
  preflight(config) {
    if (config.ANALYTICS_HOST !== '' && !DATABASE_NAME.test(databaseOf(config)))
      throw new Error(
        `ANALYTICS_DATABASE must be letters, digits and _ (not starting with a digit), at most 63 (got ${config.ANALYTICS_DATABASE})`,
      )
  },
  service(ctx) {
    const c = ctx.config
    const log = ctx.log.child({ mod: 'analytics' })
    if (c.ANALYTICS_HOST === '') return { routes: analyticsHandlers(undefined, log) }
    const database = databaseOf(c)
    const settings = {
      host: c.ANALYTICS_HOST,
      port: c.ANALYTICS_PORT,
      user: c.ANALYTICS_USER,
      password: c.ANALYTICS_PASSWORD,
    }
    // inserts wait longer than a page read: a page is someone waiting, an insert is not
    const writer = new AnalyticsWriter(
      clickHouseHttp({ ...settings, timeoutMs: 10_000 }),
      { database, retentionDays: c.ANALYTICS_RETENTION_DAYS, capacity: c.ANALYTICS_BUFFER_RECORDS },
      log,
    )
    if (c.ANALYTICS_HOT_RETENTION_DAYS < c.ANALYTICS_RETENTION_DAYS)
      log.info(
        { hotDays: c.ANALYTICS_HOT_RETENTION_DAYS, retentionDays: c.ANALYTICS_RETENTION_DAYS },
        'ANALYTICS_HOT_RETENTION_DAYS is not applied: moving older log partitions to object storage needs a ClickHouse storage policy with a cold volume, which the platform does not set up; every row stays on the server default disk until ANALYTICS_RETENTION_DAYS',
      )
    writer.start()
    setProcessAnalyticsWriter(writer)
    const feeds = subscribeLogFeeds(ctx.nc, ctx.names, writer, log)
    return {
      routes: analyticsHandlers({ ch: clickHouseHttp({ ...settings, timeoutMs: 5_000 }), database }, log),
      async stop() {
        feeds.close()
        await writer.stop()
        setProcessAnalyticsWriter(undefined)
      },
    }
  },
})
