import { startGateway, type Gateway } from '../../gateway/server.ts'
import type { RouteDef } from '../api/route.ts'
import { componentStaticAssets } from '../components/gateway-assets.ts'
import { publicBase } from '../files/handlers.ts'
import { startHealthMonitor } from '../platform/health.ts'
import { workersBucket } from '../platform/heartbeat.ts'
import { onScrape, sseStreamsOpen } from '../platform/metrics.ts'
import type { Infrastructure } from './infrastructure.ts'
import type { Lifecycle } from './lifecycle.ts'

/** The gateway role: HTTP and SSE on uWebSockets.js, /health from the monitor below. */
export async function startGatewayRole(
  infra: Infrastructure,
  routes: RouteDef[],
  version: string,
  life: Lifecycle,
): Promise<Gateway> {
  const { config, log } = infra
  // Postgres only where this process has a database; an edge gateway reports the workers' heartbeats.
  const localPg = life.local.postgres
  const monitor = await startHealthMonitor({
    nc: infra.nc,
    workers: await workersBucket(infra.nc, infra.names),
    ...(infra.databaseUrl === undefined ? {} : { databaseUrl: infra.databaseUrl }),
    ...(localPg === undefined ? {} : { postgresRunning: () => localPg.state() === 'running' }),
    log: log.child({ mod: 'health' }),
  })
  life.onStop(async () => monitor.stop())
  const gateway = await startGateway(
    {
      health: () => monitor.components(),
      nc: infra.nc,
      names: infra.names,
      routes,
      log: log.child({ mod: 'gateway' }),
      secretKey: config.SECRET_KEY,
      corsOrigins: config.CORS_ORIGINS,
      trustedProxies: config.TRUSTED_PROXIES,
      maxBodyBytes: config.HTTP_MAX_BODY_BYTES,
      // a config or package text in a JSON string: CONFIG_MAX_BYTES plus room for its escapes
      documentBodyBytes: Math.ceil(config.CONFIG_MAX_BYTES * 1.25) + 65_536,
      version,
      // request logs for the analytics writer (src/analytics/), only when there is a store
      ...(config.ANALYTICS_HOST === '' ? {} : { requestLog: {} }),
      // the component pages' libraries (React, platform-ui), served by the gateway from memory
      assets: [componentStaticAssets()],
      // GET /metrics on this port unless METRICS_PORT gives them a port of their own (src/main.ts)
      ...(config.METRICS_PORT === 0 ? { metrics: { token: config.METRICS_TOKEN } } : {}),
      // the MCP route's 401 names the protected resource metadata at this base (RouteDef.jsonRpc)
      publicBaseUrl: publicBase(config),
      sse: {
        pingMs: config.SSE_PING_SECONDS * 1000,
        maxBufferBytes: config.SSE_MAX_BUFFER_BYTES,
        idleTimeoutMs: config.SSE_IDLE_TIMEOUT_SECONDS * 1000,
      },
    },
    config.HOST,
    config.PORT,
  )
  life.onStop(async () => gateway.close())
  life.onStop(onScrape(() => sseStreamsOpen.inc(gateway.sseStreams())))
  return gateway
}
