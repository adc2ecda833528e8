import { openNodeDirectory } from '../../sandbox/converge.ts'
import type { ServiceBase } from '../feature/define.ts'
import { processTotals, serviceRow, type HealthContribution } from '../feature/health.ts'

/*
 * The sandboxes' part of `GET /api/v1/system/health` (the sandbox-admin feature's `health`): one
 * `sandboxes` service over the worker processes' sandbox heartbeats (WORKERS `sandbox.<node>`,
 * read like `GET /api/v1/containers/stats`). A pool replaces a container that fails its health
 * check or breaks at once, so an unhealthy container shows as a missing one: a warm pool
 * (SANDBOX_EXECUTOR=pool) holding fewer than its minimum and not starting any — its driver cannot
 * start them. No worker process beating: no row (the job pools' rows say the workers are gone).
 */
export async function sandboxHealth(ctx: Pick<ServiceBase, 'nc' | 'names'>): Promise<HealthContribution> {
  const nodes = await (await openNodeDirectory(ctx.nc, ctx.names)).live()
  if (nodes.length === 0) return {}
  const rows = nodes.map(({ node, info: i, last_seen }) => ({
    node,
    executor: i.executor,
    driver: i.driver,
    total: i.total,
    idle: i.idle,
    in_use: i.in_use,
    starting: i.starting,
    min_size: i.min_size,
    max_size: i.max_size,
    waiting: i.waiting,
    destroyed_on_error: i.destroyed_on_error,
    missing: i.executor === 'pool' ? Math.max(0, i.min_size - i.total - i.starting) : 0,
    shared_workers: i.shared.count,
    last_seen,
  }))
  const missing = rows.reduce((a, r) => a + r.missing, 0)
  const { processes: _p, ...usage } = processTotals(
    nodes.flatMap((n) =>
      n.process === undefined
        ? []
        : [{ role: 'sandbox', nodeId: n.node, info: {}, last_seen: n.last_seen, process: n.process }],
    ),
  )
  const short = rows.filter((r) => r.missing > 0).map((r) => r.node)
  return {
    services: [
      serviceRow({
        name: 'sandboxes',
        kind: 'application',
        status: 'up',
        health: missing > 0 ? 'degraded' : 'healthy',
        reason:
          missing > 0 ? `${String(missing)} containers missing below the pool minimum on ${short.join(', ')}` : null,
        instances: nodes.length,
        ...usage,
        details: {
          containers: rows.reduce((a, r) => a + r.total, 0),
          idle: rows.reduce((a, r) => a + r.idle, 0),
          in_use: rows.reduce((a, r) => a + r.in_use, 0),
          waiting: rows.reduce((a, r) => a + r.waiting, 0),
          unhealthy: missing,
          destroyed_on_error: rows.reduce((a, r) => a + r.destroyed_on_error, 0),
          nodes: rows,
        },
      }),
    ],
    warnings:
      missing > 0
        ? [
            {
              level: 'warning',
              service: 'sandboxes',
              message: `${String(missing)} sandbox containers missing below the pool minimum (${short.join(', ')}): they cannot be started`,
              value: missing,
              threshold: 0,
            },
          ]
        : [],
  }
}
