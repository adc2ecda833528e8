import { chmodSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Gateway } from '../gateway/server.ts'
import type { ConsoleServer } from './console/server.ts'
import type { SandboxExecutor } from '../sandbox/executor.ts'
import type { RouteDef } from './api/route.ts'
import type { Role } from './feature/define.ts'
import { featureActors, featureRoutes, registerFeatureErrorCodes } from './feature/collect.ts'
import { FEATURES } from './features.ts'
import type { JobService } from './jobs/start.ts'
import type { Config } from './kernel/config.ts'
import type { Logger } from './kernel/log.ts'
import { warnUnbuiltSettings } from './kernel/unbuilt-settings.ts'
import type { Db } from './platform/db.ts'
import type { NatsConnection } from './platform/nats.ts'
import { startMetricsServer } from './platform/metrics-server.ts'
import { setOutboundDnsCache } from './platform/outbound-http.ts'
import { startTracing } from './platform/tracing.ts'
import type { ResourceService } from './resources/service.ts'
import { startActorRole } from './roles/actors.ts'
import { startConsoleRole } from './roles/console.ts'
import { startGatewayRole } from './roles/gateway.ts'
import { startInfrastructure } from './roles/infrastructure.ts'
import { createLifecycle, type Lifecycle } from './roles/lifecycle.ts'
import { startServiceRole } from './roles/service.ts'
import { startWorkerRole } from './roles/workers.ts'

/*
 * The composition root: the features of the platform (src/features.ts lists them)
 * and the roles this process runs (src/roles/), in order: infrastructure → resource service →
 * workers → actor host → gateway. `close()` undoes it in reverse, within one time budget.
 */
export { FEATURES }

export const VERSION = (
  JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as { version: string }
).version
export type { Role }
export { databaseUrlOf } from './roles/infrastructure.ts'

/** The roles of this process; `all` is every role, the console unless CONSOLE_PORT is 0. */
export function rolesOf(config: Config): Set<Role> {
  const all: Role[] = ['gateway', 'resources', 'workers', 'actors', 'console']
  const asked = config.ROLES.split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  if (asked.includes('all')) return new Set(all.filter((r) => r !== 'console' || config.CONSOLE_PORT !== 0))
  const unknown = asked.filter((r) => !all.includes(r as Role))
  if (unknown.length > 0) throw new Error(`unknown ROLES: ${unknown.join(', ')} (known: all, ${all.join(', ')})`)
  return new Set(asked as Role[])
}

/** Every route of the platform: what the gateway serves and the documents describe. */
export const allRoutes = (): RouteDef[] => featureRoutes(FEATURES)

export interface Platform extends Pick<Lifecycle, 'local' | 'close' | 'abort'> {
  gateway: Gateway | undefined
  natsUrl: string
  databaseUrl: string | undefined
  db: Db | undefined
  nc: NatsConnection
  resources: ResourceService | undefined
  jobs: JobService | undefined
  sandboxes: SandboxExecutor | undefined
  superadminId: string | undefined
  /** The port of `GET /metrics` when METRICS_PORT gives it one of its own (else it is on the gateway's port, if any). */
  metricsPort: number | undefined
}

/**
 * Prometheus's endpoint of this process (docs/operations.md#metrics): its own listener when
 * METRICS_PORT is set; otherwise the gateway role serves `/metrics`, and a process without that
 * role has none (said once at start).
 */
async function serveMetrics(
  config: Config,
  roles: ReadonlySet<Role>,
  life: Lifecycle,
  log: Logger,
): Promise<number | undefined> {
  if (config.METRICS_PORT === 0) {
    if (!roles.has('gateway'))
      log.info(
        'no /metrics in this process: it has no gateway role and METRICS_PORT is 0 (set METRICS_PORT to scrape it)',
      )
    return undefined
  }
  const server = await startMetricsServer({
    host: config.HOST,
    port: config.METRICS_PORT,
    token: config.METRICS_TOKEN,
    log: log.child({ mod: 'metrics' }),
  })
  life.onStop(() => server.close())
  return server.port
}

export async function startPlatform(config: Config, log: Logger): Promise<Platform> {
  // the console role is the command line's to start (startConsole below), after the gateway
  const roles = new Set([...rolesOf(config)].filter((r) => r !== 'console'))
  if (roles.size === 0) throw new Error('no platform role in ROLES (a console-only process runs startConsole)')
  const life = createLifecycle(log)
  try {
    setOutboundDnsCache(config.OUTBOUND_DNS_CACHE_SECONDS)
    // first, so its stop runs last: the spans of the shutdown's own steps are flushed too
    const stopTracing = await startTracing(config, log)
    life.onStop(stopTracing)
    warnUnbuiltSettings(config, log)
    registerFeatureErrorCodes(FEATURES)
    for (const f of FEATURES) f.preflight?.(config, roles)
    const infra = await startInfrastructure(config, roles, life, log)
    const service = roles.has('resources') ? await startServiceRole(infra, FEATURES, life) : undefined
    const sandboxes = roles.has('workers') ? await startWorkerRole(infra, FEATURES, life, service) : undefined
    if (roles.has('actors')) await startActorRole(infra, featureActors(FEATURES), life)
    const gateway = roles.has('gateway') ? await startGatewayRole(infra, allRoutes(), VERSION, life) : undefined
    const metricsPort = await serveMetrics(config, roles, life, log)
    if (life.local.nats !== undefined || life.local.postgres !== undefined) {
      const file = join(config.DATA_DIR, 'runtime.json')
      writeFileSync(
        file,
        JSON.stringify(
          {
            pid: process.pid,
            natsUrl: infra.natsUrl,
            databaseUrl: infra.databaseUrl,
            gatewayPort: gateway?.port,
            ...(metricsPort === undefined ? {} : { metricsPort }),
          },
          null,
          2,
        ),
      )
      chmodSync(file, 0o600)
    }
    const { db, resources, jobs, superadminId } = service ?? {}
    return {
      gateway,
      natsUrl: infra.natsUrl,
      databaseUrl: infra.databaseUrl,
      db,
      nc: infra.nc,
      resources,
      jobs,
      sandboxes,
      superadminId,
      metricsPort,
      get local() {
        return life.local
      },
      close: () => life.close(),
      abort: () => life.abort(),
    }
  } catch (err) {
    await life.close()
    throw err
  }
}

/**
 * The console role (src/roles/console.ts): ROLES=console alone, or with the gateway's port of a
 * started platform in the same process (`npm start`). Stops with `close()`.
 */
export async function startConsole(config: Config, log: Logger, gatewayPort?: number): Promise<ConsoleServer> {
  return startConsoleRole(config, log, gatewayPort)
}
