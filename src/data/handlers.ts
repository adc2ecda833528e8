import { bind, type BoundRoute } from '../api/bind.ts'
import { can, type Principal } from '../auth/principal.ts'
import type { Config } from '../kernel/config.ts'
import { AppError, forbidden, notFound } from '../kernel/errors.ts'
import type { Logger } from '../kernel/log.ts'
import { databaseConnectionKind } from '../kinds/database-connection/kind.ts'
import type { Db } from '../platform/db.ts'
import { resourcePermission } from '../resources/permissions.ts'
import type { ResourceService } from '../resources/service.ts'
import { executableQuery, runQuery } from './execute.ts'
import { assertNotPlatformDatabase, type PlatformDatabase } from './platform-database.ts'
import { openPool, settingsOf, type ConnectionPools } from './pools.ts'
import { DATA_ROUTES as R } from './routes.ts'
import type { ConnectionSettings } from './drivers/types.ts'

export interface DataHandlerDeps {
  db: Db
  config: Config
  resources: ResourceService
  pools: ConnectionPools
  log: Logger
  /** The platform's own database (platform-database.ts), which a tested connection may not lead to. */
  platformDatabase: PlatformDatabase | undefined
}

/** Connections are an admin-only area: 403 for anyone without the `:all` grant. */
function assertAdmin(p: Principal, action: string): void {
  if (!can(p, resourcePermission(databaseConnectionKind, action, { namespace: '', name: '*' }, 'all')))
    throw forbidden('database-connections are admin-only', 'auth.admin_only')
}

/**
 * Opens a throwaway pool, asks the server's version (and on Postgres what the role may do that a
 * query's should not: `warnings`), closes it. A failed connection is an answer (`success: false`
 * with the reason), not an error: the request itself was fine.
 */
async function testConnection(s: ConnectionSettings, allowPlatformDatabase: boolean, d: DataHandlerDeps) {
  const started = performance.now()
  // errors, not answers: a host name that does not resolve (502 upstream.dns_failed) and the
  // platform's own database without allow_platform_database (422), as on every use
  await assertNotPlatformDatabase(s, d.platformDatabase, allowPlatformDatabase)
  const pool = openPool({ ...s, minPool: 0, maxPool: 1 }, d.config, d.log)
  try {
    const version = await pool.serverVersion(d.config.DATABASE_CONNECT_TIMEOUT_MS)
    // a server that answers like Postgres without its catalog (a proxy, a compatible engine) still tests fine
    const warnings = (await pool.privilegeWarnings?.().catch(() => [])) ?? []
    return {
      success: true,
      message: version,
      server_version: version,
      duration_ms: Math.round(performance.now() - started),
      warnings,
    }
  } catch (err) {
    const message = err instanceof AppError ? err.message : String(err)
    return {
      success: false,
      message,
      server_version: null,
      duration_ms: Math.round(performance.now() - started),
      warnings: [],
    }
  } finally {
    await pool.close().catch(() => undefined)
  }
}

/**
 * At save: a Postgres connection's role is probed once (a throwaway pool) and what it may do beyond
 * a query's business is logged as a warning — a resource record has no place for one; the test
 * routes answer the same warnings. Never throws: an unreachable database is only logged at debug.
 */
export async function warnAboutRole(d: DataHandlerDeps, connectionId: string): Promise<void> {
  try {
    const record = await d.resources.byId(databaseConnectionKind, connectionId)
    if (record === null || record.connection_type !== 'postgresql') return
    const secrets = await d.resources.secretsOf(databaseConnectionKind, record.id)
    const pool = openPool(
      { ...settingsOf(record, secrets['password'] ?? null, d.config), minPool: 0, maxPool: 1 },
      d.config,
      d.log,
    )
    try {
      const warnings = (await pool.privilegeWarnings?.()) ?? []
      if (warnings.length > 0)
        d.log.warn(
          { connection: record.name, warnings },
          'database connection saved with a role that can do more than queries need',
        )
    } finally {
      await pool.close().catch(() => undefined)
    }
  } catch (err) {
    d.log.debug(
      { connection: connectionId, err: String(err) },
      'could not check the role of a saved database connection',
    )
  }
}

export function dataHandlers(d: DataHandlerDeps): BoundRoute[] {
  const execute = async ({
    principal,
    params,
    body,
  }: {
    principal: Principal
    params: { namespace: string; name: string }
    body: { input?: Record<string, unknown> }
  }) => {
    const q = await executableQuery(d, principal, params.namespace, params.name)
    return { body: await runQuery(d, principal, q, body.input ?? {}) }
  }
  return [
    bind(R.testRaw, async ({ principal, body }) => {
      assertAdmin(principal, 'read')
      const spec = settingsOf(
        {
          connection_type: body.connection_type,
          host: body.host,
          port: body.port ?? null,
          database: body.database ?? '',
          username: body.username ?? '',
          password: null,
          ssl_mode: body.ssl_mode ?? null,
          config: body.config ?? {},
          allow_platform_database: false,
        },
        body.password ?? null,
        d.config,
      )
      return { body: await testConnection(spec, body.allow_platform_database ?? false, d) }
    }),
    bind(R.testSaved, async ({ principal, params }) => {
      assertAdmin(principal, 'read')
      const record = await d.resources.byId(databaseConnectionKind, params.id)
      if (record === null) throw notFound(`database connection ${params.id} not found`)
      const secrets = await d.resources.secretsOf(databaseConnectionKind, record.id)
      return {
        body: await testConnection(
          settingsOf(record, secrets['password'] ?? null, d.config),
          record.allow_platform_database === true,
          d,
        ),
      }
    }),
    bind(R.execute, execute),
    bind(R.executeManagement, execute),
  ]
}
