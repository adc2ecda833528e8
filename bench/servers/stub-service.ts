import { bind } from '../../src/api/bind.ts'
import { serveRpc } from '../../src/api/rpc-server.ts'
import { loadConfig } from '../../src/kernel/config.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { allRoutes } from '../../src/main.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { connectNats, natsAuthOf, provisionNats } from '../../src/platform/nats.ts'
import { onShutdown, reportFailure, reportReady } from './protocol.ts'

/*
 * A resource service that costs nothing: serves one route (BENCH_STUB_ROUTE, a route id) through the
 * platform's own `serveRpc`, always answering 200 with the JSON in BENCH_STUB_BODY. With it the
 * gateway runs at the rate it can sustain itself, not at the rate the real service allows.
 */
try {
  const config = loadConfig(process.env)
  const log = createLogger({ level: config.LOG_LEVEL, svc: 'bench-stub' })
  const routeId = process.env['BENCH_STUB_ROUTE'] ?? ''
  const route = allRoutes().find((r) => r.id === routeId && r.target === 'rpc')
  if (route === undefined) throw new Error(`BENCH_STUB_ROUTE: no rpc route ${routeId}`)
  const body: unknown = JSON.parse(process.env['BENCH_STUB_BODY'] ?? 'null')
  const nc = await connectNats(config.NATS_URL, 'bench-stub', log, natsAuthOf(config))
  const names = natsNames(config.NATS_PREFIX)
  // A ROLES=gateway process waits until a resources or workers process has provisioned the NATS
  // layout (its SSE stream, the WORKERS bucket); in this bench the stub plays that process.
  await provisionNats(nc, names, log)
  const rpc = serveRpc({
    nc,
    names,
    routes: [bind({ ...route, auth: false }, () => Promise.resolve({ status: 200, body }))],
    log,
  })
  onShutdown(async () => {
    await rpc.close()
    await nc.drain()
  })
  reportReady({ port: 0 })
} catch (err) {
  reportFailure(err)
}
