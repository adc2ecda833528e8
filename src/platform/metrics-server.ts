import { createHash, timingSafeEqual } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Logger } from '../kernel/log.ts'
import { renderMetrics } from './metrics.ts'

/*
 * Where Prometheus scrapes a process (docs/operations.md#metrics). With METRICS_PORT 0 (the
 * default) a process with the gateway role answers `GET /metrics` on its gateway port; with a
 * METRICS_PORT every process answers it on that port alone (this small node:http server, off the
 * hot path, and the gateway port no longer has it), which is how a process without the gateway
 * role is scraped and how the endpoint is kept off a public port. METRICS_TOKEN, when set, is the
 * bearer token a scrape must send on either.
 */

const digest = (s: string): Buffer => createHash('sha256').update(s).digest()

/** Whether an `Authorization` header value may read the metrics: anything when no token is set, else `Bearer <token>`. */
export function metricsAuthorized(authorization: string | undefined, token: string): boolean {
  if (token === '') return true
  if (authorization === undefined || !authorization.startsWith('Bearer ')) return false
  // compared as digests: equal lengths for timingSafeEqual, and no early exit on the first differing byte
  return timingSafeEqual(digest(authorization.slice('Bearer '.length)), digest(token))
}

export interface MetricsServer {
  port: number
  close(): Promise<void>
}

export async function startMetricsServer(o: {
  host: string
  port: number
  token: string
  log: Logger
}): Promise<MetricsServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics\n')
      return
    }
    if (!metricsAuthorized(req.headers.authorization, o.token)) {
      res.writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer' }).end('bearer token required\n')
      return
    }
    renderMetrics().then(
      (m) => res.writeHead(200, { 'content-type': m.contentType }).end(req.method === 'HEAD' ? undefined : m.body),
      (err: unknown) => {
        o.log.error({ err }, 'metrics rendering failed')
        res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics rendering failed\n')
      },
    )
  })
  server.keepAliveTimeout = 65_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(o.port, o.host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const port = (server.address() as AddressInfo).port
  o.log.info({ host: o.host, port }, 'metrics listening')
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
