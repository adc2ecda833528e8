import { randomUUID } from 'node:crypto'
import type { KV } from '@nats-io/kv'
import { POOL_APPLIED_SUBJECT } from '../actors/protocols/pool.ts'
import { openActorStates } from '../actors/runtime/provision.ts'
import {
  POOL_KEYS,
  type PoolApplied,
  type PoolDesired,
  type PoolKey,
  type PoolNodeState,
  type SandboxNodeInfo,
} from '../schemas/sandbox-pool.ts'
import type { Config } from '../src/kernel/config.ts'
import type { Logger } from '../src/kernel/log.ts'
import { startHeartbeat, workersBucket, type Heartbeat } from '../src/platform/heartbeat.ts'
import type { NatsConnection } from '../src/platform/nats.ts'
import type { NatsNames } from '../src/platform/nats-names.ts'
import { openNodeDirectory, plan, shareOf, type Applied, type LiveNode } from './converge.ts'
import { readDesired, watchDesired } from './pool-desired.ts'
import type { SandboxExecutor } from './executor.ts'

/*
 * A worker process's side of the pool actors (actors/pool/). The desired state of each pool
 * (target size, reload generation, package set, restart requests) lives in its actor's state in
 * ACTOR_STATE; this process watches those keys (and re-reads them every heartbeat interval, which
 * also catches a change of the live processes), converges its own pools to them — its share of
 * the target, one recycle per new generation — and reports each application on
 * `sandbox.pool.applied`, which the admin endpoint that sent the request waits for. A process
 * that starts (or restarts after kill -9) reads the same state and comes up at its share.
 *
 * It also keeps the heartbeat `sandbox.<node>` in WORKERS current: the pools' stats, container and
 * shared-worker names and what was applied, rewritten when they change (checked every 250 ms)
 * and every heartbeat interval. The admin endpoints answer from those beats. Executions go
 * straight to the local executor (no NATS on the call path); only an execution after which a
 * member was recycled or destroyed, or a shared worker came up, waits for the beat to be written,
 * so the caller who sees its result and then reads the stats sees that too.
 */
export interface SandboxControl {
  nodeId: string
  /** The executor to hand to the features: the same pools, with the prompt beat described above. */
  executor: SandboxExecutor
  stop(): Promise<void>
}

const POLL_MS = 250
const BEAT_WAIT_MS = 1_000

const bounded = async (p: Promise<unknown>, ms: number): Promise<void> => {
  let timer: NodeJS.Timeout | undefined
  await Promise.race([p.catch(() => undefined), new Promise((r) => (timer = setTimeout(r, ms)))])
  clearTimeout(timer)
}

export async function startSandboxControl(o: {
  nc: NatsConnection
  names: NatsNames
  sandboxes: SandboxExecutor
  config: Config
  /** The package directory the executor started with. */
  packagesDir: string | undefined
  log: Logger
}): Promise<SandboxControl> {
  const nodeId = randomUUID().slice(0, 8)
  const log = o.log.child({ node: nodeId })
  const sbx = o.sandboxes
  const intervalMs = Math.max(100, Math.round(o.config.QUEUE_HEARTBEAT_SECONDS * 1000))
  const workers: KV = await workersBucket(o.nc, o.names)
  const states: KV = await openActorStates(o.nc, o.names)
  const directory = await openNodeDirectory(o.nc, o.names)
  const applied: Record<PoolKey, Applied> = {
    sandbox: { seq: -1, generation: 0, share: null, packages: undefined, reloads: 0 },
    shared: { seq: -1, generation: 0, share: null, packages: undefined, reloads: 0 },
  }
  let packagesNow = o.packagesDir
  let stopped = false
  const isStopped = (): boolean => stopped

  const nodeState = (a: Applied): PoolNodeState => ({
    seq: a.seq,
    generation: a.generation,
    share: a.share,
    reloads: a.reloads,
  })
  const info = (): SandboxNodeInfo => ({
    ...sbx.stats(),
    names: sbx.pool?.names() ?? [],
    pid: process.pid,
    interval_ms: intervalMs,
    shared: {
      started: sbx.sharedStarted(),
      count: sbx.sharedCount(),
      workers: sbx.sharedStarted() ? (sbx.shared?.list() ?? []) : [],
    },
    pools: { sandbox: nodeState(applied.sandbox), shared: nodeState(applied.shared) },
  })

  // --- the heartbeat, current within POLL_MS -------------------------------------------------
  let written = ''
  const heartbeat: Heartbeat = startHeartbeat({
    kv: workers,
    role: 'sandbox',
    nodeId,
    info: () => {
      const i = info()
      written = JSON.stringify(i)
      return i
    },
    log,
    intervalMs,
  })
  let writes: Promise<void> = Promise.resolve()
  const write = (): Promise<void> => {
    writes = writes
      .then(() => heartbeat.beat())
      .catch((err: unknown) => log.warn({ err }, 'sandbox heartbeat write failed'))
    return writes
  }
  await heartbeat.beat()
  const poll = setInterval(
    () => {
      if (JSON.stringify(info()) !== written) void write()
    },
    Math.min(POLL_MS, intervalMs),
  )
  poll.unref()

  // --- converging to the pool actors' state --------------------------------------------------
  const reload = async (pool: PoolKey): Promise<Record<string, unknown>> => {
    if (pool === 'sandbox') return sbx.pool === null ? { idle_containers: 0, success: 0, failed: 0 } : sbx.pool.reload()
    // shared workers not started yet start later with the new settings: nothing to recycle
    return sbx.sharedStarted() && sbx.shared !== null
      ? sbx.shared.reload()
      : { total_workers: 0, success: 0, failed: 0 }
  }
  const scale = async (pool: PoolKey, n: number): Promise<Record<string, unknown>> => {
    if (pool === 'sandbox') {
      if (sbx.pool === null) throw new Error(`SANDBOX_EXECUTOR=${sbx.stats().executor} has no pool to scale`)
      return sbx.pool.scale(n)
    }
    if (sbx.shared === null) throw new Error('no shared workers')
    return sbx.shared.scale(n)
  }
  const restart = async (name: string): Promise<boolean> => {
    if ((await sbx.pool?.restart(name)) === true) return true
    return sbx.sharedStarted() && sbx.shared !== null ? sbx.shared.restart(name) : false
  }

  /** The live processes as last listed (by the periodic re-read, or by an application that needed them). */
  let members: { at: number; nodes: LiveNode[] } = { at: 0, nodes: [] }
  const listMembers = async (): Promise<LiveNode[]> => {
    members = { at: Date.now(), nodes: await directory.live() }
    return members.nodes
  }
  const sharing = (pool: PoolKey, nodes: readonly LiveNode[]): string[] =>
    nodes.filter((n) => pool === 'shared' || n.info.executor === 'pool').map((n) => n.node)

  const applyOnce = async (pool: PoolKey, d: PoolDesired): Promise<void> => {
    const a = applied[pool]
    const hasPool = pool === 'shared' || sbx.pool !== null
    // a listing younger than a heartbeat interval is good enough; a new request lists again
    const fresh =
      d.seq === a.seq && Date.now() - members.at < intervalMs
        ? members.nodes
        : d.target === null
          ? []
          : await listMembers()
    const share = d.target === null || !hasPool ? null : shareOf(d.target, sharing(pool, fresh), nodeId)
    const p = plan(d, a, share, packagesNow)
    if (d.seq === a.seq && p.scale === null && !p.reload && p.packages === undefined) return
    const report: PoolApplied = { node: nodeId, pool, seq: d.seq, request_ids: p.requestIds }
    let failed = false
    try {
      if (p.packages !== undefined) {
        sbx.setPackagesDir(p.packages ?? undefined)
        packagesNow = p.packages ?? undefined
      }
      if (p.reload) {
        report.reload = await reload(pool)
        a.reloads++
      }
      if (p.scale !== null) report.scale = await scale(pool, p.scale)
      if (p.restarts.length > 0)
        report.restart = await Promise.all(p.restarts.map(async (name) => ({ name, found: await restart(name) })))
    } catch (err) {
      failed = true
      report.error = err instanceof Error ? err.message : String(err)
      log.warn({ err, pool, seq: d.seq }, 'applying the pool state failed')
    }
    // a failed scale is tried again at the next check (the share stays what was applied)
    applied[pool] = {
      seq: d.seq,
      generation: d.generation,
      share: failed ? a.share : share,
      packages: d.packages_dir !== undefined ? d.packages_dir : a.packages,
      reloads: a.reloads,
    }
    log.info({ pool, seq: d.seq, share, reload: p.reload, restarts: p.restarts.length }, 'pool state applied')
    // the beat first: whoever reads the stats after the answer sees what was applied
    await bounded(write(), BEAT_WAIT_MS)
    if (p.requestIds.length > 0) o.nc.publish(o.names.subject(POOL_APPLIED_SUBJECT), JSON.stringify(report))
  }

  // one application at a time per pool, always of the newest state seen
  const latest: Partial<Record<PoolKey, PoolDesired>> = {}
  const running: Record<PoolKey, boolean> = { sandbox: false, shared: false }
  const again: Record<PoolKey, boolean> = { sandbox: false, shared: false }
  const loops = new Set<Promise<void>>()
  const kick = (pool: PoolKey): void => {
    if (stopped) return
    if (running[pool]) {
      again[pool] = true
      return
    }
    running[pool] = true
    const loop = (async () => {
      try {
        for (let more = true; more; more = again[pool] && !isStopped()) {
          again[pool] = false
          const d = latest[pool]
          if (d !== undefined)
            await applyOnce(pool, d).catch((err: unknown) => log.warn({ err, pool }, 'pool state check failed'))
        }
      } finally {
        running[pool] = false
      }
    })()
    loops.add(loop)
    void loop.finally(() => loops.delete(loop))
  }
  const offer = (pool: PoolKey, d: PoolDesired): void => {
    const seen = latest[pool]
    if (seen !== undefined && d.seq < seen.seq) return
    latest[pool] = d
    kick(pool)
  }

  const stopWatch = await watchDesired(states, offer, log)
  // the re-read: repairs a missed update and re-splits the target when processes came or went
  const resync = async (): Promise<void> => {
    await listMembers()
    for (const pool of POOL_KEYS) offer(pool, await readDesired(states, pool))
  }
  await resync()
  const timer = setInterval(() => {
    resync().catch((err: unknown) => log.warn({ err }, 'reading the pool state failed'))
  }, intervalMs)
  timer.unref()

  // --- the executor the features use ----------------------------------------------------------
  const shape = (): string => {
    const s = sbx.stats()
    return `${String(s.recycled)}/${String(s.destroyed_on_error)}/${sbx.sharedStarted() ? (sbx.shared?.list() ?? []).map((w) => w.name).join(',') : '-'}`
  }
  let lastShape = shape()
  const afterRun = async (): Promise<void> => {
    const now = shape()
    if (now === lastShape) return
    lastShape = now
    await bounded(write(), BEAT_WAIT_MS)
  }
  const executor: SandboxExecutor = {
    get pool() {
      return sbx.pool
    },
    get shared() {
      return sbx.shared
    },
    sharedStarted: () => sbx.sharedStarted(),
    sharedCount: () => sbx.sharedCount(),
    stats: () => sbx.stats(),
    setPackagesDir: (dir) => sbx.setPackagesDir(dir),
    close: () => sbx.close(),
    async run(req, opts) {
      try {
        return await sbx.run(req, opts)
      } finally {
        await afterRun()
      }
    },
  }

  return {
    nodeId,
    executor,
    async stop() {
      stopped = true
      clearInterval(timer)
      clearInterval(poll)
      stopWatch()
      await Promise.allSettled([...loops])
      await writes
      await heartbeat.stop()
    },
  }
}
