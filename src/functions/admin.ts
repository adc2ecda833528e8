import { bind, type BoundRoute, type RouteHandler } from '../api/bind.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'
import { can, type Principal } from '../auth/principal.ts'
import { registerPermission } from '../access/permission-registry.ts'
import { AppError, forbidden, notFound } from '../kernel/errors.ts'
import type { Db } from '../platform/db.ts'
import { listMembers, workersBucket } from '../platform/heartbeat.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { controlSubject, type ControlOp } from '../../sandbox/control.ts'
import { ContainerParams, ContainerRestarted, ContainersReloaded, ContainersScaleBody, ContainersScaled, ContainersStats, WorkerCount, WorkerList, WorkersReloaded, WorkersScaleBody, WorkersScaled } from '../../schemas/functions-api.ts'

/*
 * Container and shared-worker administration (SPEC §4.3). The pools live in the function worker
 * processes; these handlers ask every live sandbox node (WORKERS bucket, role `sandbox`) over
 * `sandbox.ctl` and combine the answers, so the numbers are the whole platform's.
 */
const READ = registerPermission('platform.system.read:all', 'System: read containers, workers and health (admin)')
const UPDATE = registerPermission('platform.system.update:all', 'System: scale, reload and restart containers and workers; flush stuck jobs (admin)')

const admin = { auth: true as const, target: 'rpc' as const, surface: 'management' as const, tags: ['System'], errors: [403] }

export const SANDBOX_ADMIN_ROUTES = {
  containersStats: defineRoute({
    ...admin,
    permission: READ,
    id: 'containers.stats',
    method: 'GET',
    path: '/api/v1/containers/stats',
    summary: 'Sandbox pool: idle, in use, total, max size, summed over every worker process (admin)',
    response: ContainersStats,
  }),
  containersScale: defineRoute({ ...admin, permission: UPDATE, id: 'containers.scale', method: 'POST', path: '/api/v1/containers/scale', summary: 'Set the pool size; scale-down removes idle sandboxes only (admin)', body: ContainersScaleBody, response: ContainersScaled }),
  containersReload: defineRoute({
    ...admin,
    permission: UPDATE,
    id: 'containers.reload',
    method: 'POST',
    path: '/api/v1/containers/reload',
    summary: 'Install approved packages and replace the idle sandboxes (admin)',
    response: ContainersReloaded,
  }),
  systemContainersRestart: defineRoute({
    ...admin,
    permission: UPDATE,
    id: 'system.containers.restart',
    method: 'POST',
    path: '/api/v1/system/containers/{container_name}/restart',
    summary: 'Destroy and replace one sandbox or shared worker by name; 404 when unknown (admin)',
    params: ContainerParams,
    response: ContainerRestarted,
    errors: [403, 404],
  }),
  workersList: defineRoute({ ...admin, permission: READ, id: 'workers.list', method: 'GET', path: '/api/v1/workers', summary: 'Shared (trusted) workers (admin)', response: WorkerList }),
  workersCount: defineRoute({ ...admin, permission: READ, id: 'workers.count', method: 'GET', path: '/api/v1/workers/count', summary: 'Number of shared workers (admin)', response: WorkerCount }),
  workersScale: defineRoute({
    ...admin,
    permission: UPDATE,
    id: 'workers.scale',
    method: 'POST',
    path: '/api/v1/workers/scale',
    summary: 'Set the number of shared workers (admin)',
    body: WorkersScaleBody,
    response: WorkersScaled,
  }),
  workersReload: defineRoute({ ...admin, permission: UPDATE, id: 'workers.reload', method: 'POST', path: '/api/v1/workers/reload', summary: 'Restart every shared worker with the approved packages (admin)', response: WorkersReloaded }),
}

export function sandboxAdminRoutes(): RouteDef[] {
  return Object.values(SANDBOX_ADMIN_ROUTES)
}

interface NodeAnswer<R = Record<string, unknown>> {
  node: string
  ok: boolean
  result?: R
  error?: string
}

/** Split `total` over `n` nodes as evenly as possible (the first ones take the remainder). */
export const splitTarget = (total: number, n: number, i: number): number => Math.floor(total / n) + (i < total % n ? 1 : 0)

export function sandboxAdminHandlers(d: {
  db: Db
  nc: NatsConnection
  names: NatsNames
  /** Installs approved packages; returns the directory sandboxes should mount (undefined = none). */
  installPackages?: () => Promise<{ dir: string | undefined; failed: number }>
}): BoundRoute[] {
  const R = SANDBOX_ADMIN_ROUTES
  const nodes = async (): Promise<string[]> => (await listMembers(await workersBucket(d.nc, d.names), 'sandbox')).map((m) => m.nodeId)

  const ask = async <R = Record<string, unknown>>(op: ControlOp, node?: string, waitMs = 60_000): Promise<NodeAnswer<R>[]> => {
    const expected = node === undefined ? (await nodes()).length : 1
    if (expected === 0) return []
    const out: NodeAnswer<R>[] = []
    const replies = await d.nc.requestMany(controlSubject(d.names, node), JSON.stringify(op), { strategy: 'count', maxMessages: expected, maxWait: waitMs })
    for await (const m of replies) out.push(m.json<NodeAnswer<R>>())
    return out
  }

  /** Every admin route checks the permission its route declares, then answers 200 with what `fn` returns. */
  const on = <T extends RouteDef & { permission: string }>(route: T, fn: (input: Parameters<RouteHandler<T>>[0]) => Promise<unknown>): BoundRoute =>
    bind(route, async (input) => {
      const p: Principal | null = input.principal
      if (p === null || !can(p, route.permission)) throw forbidden(`requires ${route.permission}`)
      return { status: 200, body: await fn(input) }
    })
  const sum = (xs: NodeAnswer[], key: string) => xs.reduce((a, x) => a + Number(x.result?.[key] ?? 0), 0)
  const failed = (xs: NodeAnswer[]) => xs.filter((x) => !x.ok || x.result?.['error'] !== undefined)

  return [
    on(R.containersStats, async () => {
      const xs = await ask({ op: 'stats' }, undefined, 5_000)
      return { idle: sum(xs, 'idle'), in_use: sum(xs, 'in_use'), total: sum(xs, 'total'), max_size: sum(xs, 'max_size'), starting: sum(xs, 'starting'), waiting: sum(xs, 'waiting'), executions: sum(xs, 'executions'), nodes: xs.map((x) => ({ node: x.node, ...x.result })) }
    }),
    on(R.containersScale, async ({ body: { target } }) => {
      const ids = await nodes()
      if (ids.length === 0) throw new AppError(409, 'sandbox.no_workers', 'no function worker with a sandbox pool is running')
      const xs = (await Promise.all(ids.map((node, i) => ask({ op: 'scale', target: splitTarget(target, ids.length, i) }, node)))).flat()
      const bad = failed(xs)
      if (bad.length > 0) throw new AppError(409, 'sandbox.scale_failed', String(bad[0]?.error ?? bad[0]?.result?.['error']))
      const previous = sum(xs, 'previous')
      const current = sum(xs, 'current')
      return current >= previous ? { action: 'scale_up', previous, current, added: sum(xs, 'added') } : { action: 'scale_down', previous, current, removed: sum(xs, 'removed') }
    }),
    on(R.containersReload, async () => {
      const pkgs = d.installPackages === undefined ? undefined : await d.installPackages()
      const xs = await ask({ op: 'reload', ...(pkgs === undefined ? {} : { packagesDir: pkgs.dir ?? null }) })
      const failures = sum(xs, 'failed') + failed(xs).length
      return { status: failures === 0 && (pkgs?.failed ?? 0) === 0 ? 'completed' : 'completed_with_errors', idle_containers: sum(xs, 'idle_containers'), success: sum(xs, 'success'), failed: failures, packages_failed: pkgs?.failed ?? 0 }
    }),
    on(R.systemContainersRestart, async ({ params: { container_name: name } }) => {
      const xs = await ask<{ found: boolean }>({ op: 'restart', name })
      if (!xs.some((x) => x.result?.found === true)) throw notFound(`no container named ${name}`, 'container.not_found')
      return { status: 'restarted', container: name }
    }),
    on(R.workersList, async () => {
      const xs = await ask<{ workers: Record<string, unknown>[] }>({ op: 'workers' }, undefined, 5_000)
      return xs.flatMap((x) => (x.result?.workers ?? []).map((w) => ({ ...w, node: x.node })))
    }),
    on(R.workersCount, async () => {
      const xs = await ask<{ count: number }>({ op: 'workers' }, undefined, 5_000)
      return { count: xs.reduce((a, x) => a + (x.result?.count ?? 0), 0) }
    }),
    on(R.workersScale, async ({ body: { target_count: target } }) => {
      const ids = await nodes()
      if (ids.length === 0) throw new AppError(409, 'sandbox.no_workers', 'no function worker process is running')
      const xs = (await Promise.all(ids.map((node, i) => ask({ op: 'workers.scale', target: splitTarget(target, ids.length, i) }, node)))).flat()
      const previous = sum(xs, 'previous_count')
      const current = sum(xs, 'current_count')
      return current >= previous ? { action: 'scale_up', previous_count: previous, current_count: current, added: current - previous } : { action: 'scale_down', previous_count: previous, current_count: current, removed: previous - current }
    }),
    on(R.workersReload, async () => {
      const pkgs = d.installPackages === undefined ? undefined : await d.installPackages()
      const xs = await ask({ op: 'workers.reload', ...(pkgs === undefined ? {} : { packagesDir: pkgs.dir ?? null }) })
      const failures = sum(xs, 'failed') + failed(xs).length
      return { status: failures === 0 ? 'completed' : 'completed_with_errors', total_workers: sum(xs, 'total_workers'), success: sum(xs, 'success'), failed: failures }
    }),
  ]
}
