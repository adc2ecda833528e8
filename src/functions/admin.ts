import { randomUUID } from 'node:crypto'
import type { JetStreamClient } from '@nats-io/jetstream'
import type { KV } from '@nats-io/kv'
import { Value } from '@sinclair/typebox/value'
import { readDesired } from '../../sandbox/pool-desired.ts'
import { POOL_APPLIED_SUBJECT, poolProtocol } from '../../actors/protocols/pool.ts'
import { openActorStates } from '../../actors/runtime/provision.ts'
import { sendToActor } from '../../actors/runtime/send.ts'
import { openNodeDirectory, type LiveNode, type NodeDirectory } from '../../sandbox/converge.ts'
import { PoolApplied, type PoolKey } from '../../schemas/sandbox-pool.ts'
import { bind, type BoundRoute, type RouteHandler } from '../api/bind.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'
import { can, type Principal } from '../auth/principal.ts'
import { permissionSet } from '../feature/permissions.ts'
import { AppError, forbidden, notFound } from '../kernel/errors.ts'
import type { Db } from '../platform/db.ts'
import type { Config } from '../kernel/config.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import {
  ContainerParams,
  ContainerRestarted,
  ContainersReloaded,
  ContainersScaleBody,
  ContainersScaled,
  ContainersStats,
  WorkerCount,
  WorkerList,
  WorkersReloaded,
  WorkersScaleBody,
  WorkersScaled,
} from '../../schemas/functions-api.ts'

/** The permissions this module checks, for the reference (its feature contributes the list). */
export const sandboxAdminPermissions = permissionSet()

/*
 * Container and shared-worker administration. The pools run in the worker processes;
 * their desired state lives in the pool actors (actors/pool/: key `sandbox` for the warm pool,
 * `shared` for the shared workers). Reads answer from the worker processes' heartbeats (WORKERS,
 * `sandbox.<node>`: stats, names, what each applied) and the actors' state. Scale, reload and
 * restart are messages to the actor; the handler then waits for every live worker process to
 * report having applied that request (`sandbox.pool.applied`) and sums their answers, so the
 * numbers are the whole platform's, as before. A process that does not answer in time is left
 * out (none at all: 504); the change is kept by the actor and it converges to it later.
 */
const READ = sandboxAdminPermissions.add(
  'platform.system.read:all',
  'System: read containers, workers and health (admin)',
)
const UPDATE = sandboxAdminPermissions.add(
  'platform.system.update:all',
  'System: scale, reload and restart containers and workers; flush stuck jobs (admin)',
)

const admin = {
  auth: true as const,
  target: 'rpc' as const,
  surface: 'management' as const,
  tags: ['System'],
  errors: [403],
}

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
  containersScale: defineRoute({
    ...admin,
    permission: UPDATE,
    id: 'containers.scale',
    method: 'POST',
    path: '/api/v1/containers/scale',
    summary: 'Set the pool size; scale-down removes idle sandboxes only (admin)',
    body: ContainersScaleBody,
    response: ContainersScaled,
  }),
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
  workersList: defineRoute({
    ...admin,
    permission: READ,
    id: 'workers.list',
    method: 'GET',
    path: '/api/v1/workers',
    summary: 'Shared (trusted) workers (admin)',
    response: WorkerList,
  }),
  workersCount: defineRoute({
    ...admin,
    permission: READ,
    id: 'workers.count',
    method: 'GET',
    path: '/api/v1/workers/count',
    summary: 'Number of shared workers (admin)',
    response: WorkerCount,
  }),
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
  workersReload: defineRoute({
    ...admin,
    permission: UPDATE,
    id: 'workers.reload',
    method: 'POST',
    path: '/api/v1/workers/reload',
    summary: 'Restart every shared worker with the approved packages (admin)',
    response: WorkersReloaded,
  }),
}

export function sandboxAdminRoutes(): RouteDef[] {
  return Object.values(SANDBOX_ADMIN_ROUTES)
}

export function sandboxAdminHandlers(d: {
  db: Db
  nc: NatsConnection
  js: JetStreamClient
  names: NatsNames
  config: Config
  /** Installs approved packages; returns the directory sandboxes should mount (undefined = none). */
  installPackages?: () => Promise<{ dir: string | undefined; failed: number }>
}): BoundRoute[] {
  const R = SANDBOX_ADMIN_ROUTES
  let opened: Promise<{ directory: NodeDirectory; states: KV }> | undefined
  const kv = () =>
    (opened ??= (async () => ({
      directory: await openNodeDirectory(d.nc, d.names),
      states: await openActorStates(d.nc, d.names),
    }))())
  const live = async (pool?: PoolKey): Promise<LiveNode[]> => (await kv()).directory.live(pool)
  const controlMs = d.config.SANDBOX_CONTROL_TIMEOUT_SECONDS * 1000
  const restartMs = d.config.CONTAINER_RESTART_TIMEOUT_SECONDS * 1000

  /**
   * Sends one message to a pool actor and gathers the reports of the `expected` processes that
   * applied it, until all have answered or `waitMs` ran out (the subscription is open before the
   * send, so no report is missed).
   */
  const request = async <N extends 'scale' | 'reload' | 'restart'>(
    pool: PoolKey,
    name: N,
    payload: (requestId: string) => Parameters<typeof sendToActor<typeof poolProtocol, N>>[5],
    expected: readonly LiveNode[],
    waitMs: number,
  ): Promise<PoolApplied[]> => {
    const requestId = randomUUID()
    const got = new Map<string, PoolApplied>()
    const sub = d.nc.subscribe(d.names.subject(POOL_APPLIED_SUBJECT))
    const timer = setTimeout(() => sub.unsubscribe(), waitMs)
    try {
      await sendToActor(d.js, d.names, poolProtocol, pool, name, payload(requestId), { msgId: requestId })
      if (expected.length === 0) return []
      for await (const m of sub) {
        let r: unknown
        try {
          r = m.json()
        } catch {
          continue
        }
        if (!Value.Check(PoolApplied, r) || r.pool !== pool || !r.request_ids.includes(requestId)) continue
        got.set(r.node, r)
        if (expected.every((n) => got.has(n.node))) break
      }
    } finally {
      clearTimeout(timer)
      if (!sub.isClosed()) sub.unsubscribe()
    }
    if (got.size === 0 && expected.length > 0) {
      throw new AppError(
        504,
        'sandbox.not_applied',
        `no worker process confirmed the ${name} within ${String(waitMs / 1000)} s; the pool actor keeps it and the processes converge to it`,
      )
    }
    return [...got.values()]
  }

  /** Every admin route checks the permission its route declares, then answers 200 with what `fn` returns. */
  const on = <T extends RouteDef & { permission: string }>(
    route: T,
    fn: (input: Parameters<RouteHandler<T>>[0]) => Promise<unknown>,
  ): BoundRoute =>
    bind(route, async (input) => {
      const p: Principal | null = input.principal
      if (p === null || !can(p, route.permission)) throw forbidden(`requires ${route.permission}`)
      return { status: 200, body: await fn(input) }
    })
  const num = (v: unknown): number => (typeof v === 'number' ? v : 0)
  const sum = (xs: readonly PoolApplied[], part: 'scale' | 'reload', key: string) =>
    xs.reduce((a, x) => a + num(x[part]?.[key]), 0)
  const sumInfo = (
    ns: readonly LiveNode[],
    key: 'idle' | 'in_use' | 'total' | 'max_size' | 'starting' | 'waiting' | 'executions',
  ) => ns.reduce((a, n) => a + n.info[key], 0)
  const errors = (xs: readonly PoolApplied[]) => xs.filter((x) => x.error !== undefined)

  return [
    on(R.containersStats, async () => {
      const [ns, desired] = await Promise.all([live(), kv().then((b) => readDesired(b.states, 'sandbox'))])
      return {
        idle: sumInfo(ns, 'idle'),
        in_use: sumInfo(ns, 'in_use'),
        total: sumInfo(ns, 'total'),
        max_size: sumInfo(ns, 'max_size'),
        starting: sumInfo(ns, 'starting'),
        waiting: sumInfo(ns, 'waiting'),
        executions: sumInfo(ns, 'executions'),
        desired: { target: desired.target, generation: desired.generation, packages_dir: desired.packages_dir ?? null },
        nodes: ns.map(({ node, last_seen, info: { shared: _shared, pools, interval_ms: _interval, ...stats } }) => ({
          node,
          ...stats,
          generation: pools.sandbox.generation,
          share: pools.sandbox.share,
          reloads: pools.sandbox.reloads,
          last_seen,
        })),
      }
    }),
    on(R.containersScale, async ({ body: { target } }) => {
      const all = await live()
      if (all.length === 0)
        throw new AppError(409, 'sandbox.no_workers', 'no function worker with a sandbox pool is running')
      const pooled = all.filter((n) => n.info.executor === 'pool')
      if (pooled.length === 0)
        throw new AppError(
          409,
          'sandbox.scale_failed',
          `SANDBOX_EXECUTOR=${all[0]?.info.executor ?? ''} has no pool to scale`,
        )
      const xs = await request('sandbox', 'scale', (request_id) => ({ request_id, target }), pooled, controlMs)
      const bad = errors(xs)
      if (bad.length > 0) throw new AppError(409, 'sandbox.scale_failed', bad[0]?.error ?? 'scale failed')
      const previous = sum(xs, 'scale', 'previous')
      const current = sum(xs, 'scale', 'current')
      return current >= previous
        ? { action: 'scale_up', previous, current, added: sum(xs, 'scale', 'added') }
        : { action: 'scale_down', previous, current, removed: sum(xs, 'scale', 'removed') }
    }),
    on(R.containersReload, async () => {
      const pkgs = d.installPackages === undefined ? undefined : await d.installPackages()
      const xs = await request(
        'sandbox',
        'reload',
        (request_id) => ({ request_id, ...(pkgs === undefined ? {} : { packages_dir: pkgs.dir ?? null }) }),
        await live(),
        controlMs,
      )
      const failures = sum(xs, 'reload', 'failed') + errors(xs).length
      const desired = await readDesired((await kv()).states, 'sandbox')
      return {
        status: failures === 0 && (pkgs?.failed ?? 0) === 0 ? 'completed' : 'completed_with_errors',
        idle_containers: sum(xs, 'reload', 'idle_containers'),
        success: sum(xs, 'reload', 'success'),
        failed: failures,
        packages_failed: pkgs?.failed ?? 0,
        generation: desired.generation,
      }
    }),
    on(R.systemContainersRestart, async ({ params: { container_name: name } }) => {
      const ns = await live()
      if (ns.length === 0) throw notFound(`no container named ${name}`, 'container.not_found')
      const xs = await request('sandbox', 'restart', (request_id) => ({ request_id, name }), ns, restartMs)
      if (xs.some((x) => x.restart?.some((r) => r.name === name && r.found) === true))
        return { status: 'restarted', container: name }
      if (xs.length < ns.length)
        throw new AppError(
          504,
          'sandbox.not_applied',
          `${String(ns.length - xs.length)} worker process(es) did not answer within ${String(restartMs / 1000)} s and the others have no container named ${name}`,
        )
      throw notFound(`no container named ${name}`, 'container.not_found')
    }),
    on(R.workersList, async () =>
      (await live()).flatMap((n) => n.info.shared.workers.map((w) => ({ ...w, node: n.node }))),
    ),
    on(R.workersCount, async () => ({ count: (await live()).reduce((a, n) => a + n.info.shared.count, 0) })),
    on(R.workersScale, async ({ body: { target_count: target } }) => {
      const ns = await live()
      if (ns.length === 0) throw new AppError(409, 'sandbox.no_workers', 'no function worker process is running')
      const xs = await request('shared', 'scale', (request_id) => ({ request_id, target }), ns, controlMs)
      const bad = errors(xs)
      if (bad.length > 0) throw new AppError(409, 'sandbox.scale_failed', bad[0]?.error ?? 'scale failed')
      const previous = sum(xs, 'scale', 'previous_count')
      const current = sum(xs, 'scale', 'current_count')
      return current >= previous
        ? { action: 'scale_up', previous_count: previous, current_count: current, added: current - previous }
        : { action: 'scale_down', previous_count: previous, current_count: current, removed: previous - current }
    }),
    on(R.workersReload, async () => {
      const pkgs = d.installPackages === undefined ? undefined : await d.installPackages()
      const xs = await request(
        'shared',
        'reload',
        (request_id) => ({ request_id, ...(pkgs === undefined ? {} : { packages_dir: pkgs.dir ?? null }) }),
        await live(),
        controlMs,
      )
      const failures = sum(xs, 'reload', 'failed') + errors(xs).length
      return {
        status: failures === 0 ? 'completed' : 'completed_with_errors',
        total_workers: sum(xs, 'reload', 'total_workers'),
        success: sum(xs, 'reload', 'success'),
        failed: failures,
      }
    }),
  ]
}
