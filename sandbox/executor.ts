import { randomUUID } from 'node:crypto'
import { AppError } from '../src/kernel/errors.ts'
import type { Config } from '../src/kernel/config.ts'
import type { Logger } from '../src/kernel/log.ts'
import { startSpan, tracing } from '../src/platform/tracing.ts'
import { openChannel, SandboxBroken, type ExecOutcome, type ExecRequest, type RunnerChannel } from './channel.ts'
import type { SandboxDriver, SandboxLimits, SandboxProcess, SandboxSpec } from './driver.ts'
import { bubblewrapDriver } from './drivers/bubblewrap.ts'
import { processDriver } from './drivers/process.ts'
import { abortReason, createWarmPool, type PoolStats, type WarmPool } from './pool.ts'

/*
 * Where a function runs. Untrusted functions: SANDBOX_EXECUTOR `pool` (warm pool),
 * `single_use` (a fresh sandbox per execution, destroyed after), `k8s_pod` (a fresh pod per
 * execution) or `disabled` (rejected). Trusted (`shared_pool`) functions: TRUSTED_EXECUTOR
 * `shared` (DEFAULT_WORKER_COUNT long-lived shared workers, round-robin, several executions at a
 * time each) or `inprocess` (one Python child owned by the worker process).
 */

export interface SharedWorkerInfo {
  name: string
  inflight: number
  executions: number
  started_at: string
}

export interface SandboxExecutor {
  /**
   * `signal` aborts an untrusted execution: its sandbox (pool member, single-use sandbox or pod)
   * is destroyed at once. A trusted shared worker runs other executions too and is left alone.
   */
  run(req: ExecRequest, o: { trusted: boolean; signal?: AbortSignal | undefined }): Promise<ExecOutcome>
  /** The sandbox pool (null unless SANDBOX_EXECUTOR=pool). */
  pool: WarmPool | null
  /** The trusted shared workers (started on first use or first admin call). */
  shared: SharedWorkers | null
  /** Whether the shared workers were started (listing must not start them). */
  sharedStarted(): boolean
  /** Shared workers running, or configured when not started yet. */
  sharedCount(): number
  stats(): PoolStats & { executor: string; driver: string }
  /** Re-reads the packages directory: new sandboxes and shared workers get it. */
  setPackagesDir(dir: string | undefined): void
  close(): Promise<void>
}

export interface SharedWorkers {
  run(req: ExecRequest): Promise<ExecOutcome>
  count(): number
  list(): SharedWorkerInfo[]
  scale(target: number): Promise<{
    action: 'scale_up' | 'scale_down'
    previous_count: number
    current_count: number
    added?: number
    removed?: number
  }>
  reload(): Promise<{ total_workers: number; success: number; failed: number }>
  restart(name: string): Promise<boolean>
  close(): Promise<void>
}

export function storageMb(s: string): number {
  const m = /^([0-9]+)([kmgKMG]?)$/.exec(s)
  if (m === null) return 1024
  const n = Number(m[1])
  const unit = (m[2] ?? '').toLowerCase()
  return unit === 'g'
    ? n * 1024
    : unit === 'k'
      ? Math.max(1, Math.ceil(n / 1024))
      : unit === 'm'
        ? n
        : Math.max(1, Math.ceil(n / 1024 / 1024))
}

export function limitsOf(config: Config): SandboxLimits {
  return {
    memoryMb: config.MAX_FUNCTION_MEMORY,
    cpus: config.MAX_FUNCTION_CPU,
    // MAX_FUNCTION_STORAGE is the disk of one execution: /tmp is its only writable disk, so the
    // tmpfs is sized to it (when smaller than SANDBOX_TMP_MB) and no single file may exceed it either
    tmpMb: Math.min(config.SANDBOX_TMP_MB, storageMb(config.MAX_FUNCTION_STORAGE)),
    shmMb: config.SANDBOX_SHM_MB,
    fileMb: Math.min(storageMb(config.MAX_FUNCTION_STORAGE), 1024 * 64),
    maxProcs: config.SANDBOX_MAX_PROCESSES,
    maxFiles: 256,
  }
}

export async function localDriver(config: Config): Promise<SandboxDriver> {
  if (config.SANDBOX_DRIVER === 'docker') {
    const [{ dockerDriver }, { ensureSandboxImage }, { default: Docker }] = await Promise.all([
      import('./drivers/docker.ts'),
      import('./image.ts'),
      import('dockerode'),
    ])
    // DOCKER_HOST wins: `unix:///path` is a socket, `tcp://host:port` an address.
    const unix = config.DOCKER_HOST.startsWith('unix://') ? config.DOCKER_HOST.slice('unix://'.length) : undefined
    const host = config.DOCKER_HOST === '' || unix !== undefined ? undefined : config.DOCKER_HOST
    const socketPath = unix ?? config.SANDBOX_DOCKER_SOCKET
    // The image is imported through the engine's own API (Docker and podman alike), not a CLI.
    const engine =
      host === undefined
        ? new Docker({ socketPath })
        : new Docker({ host: new URL(host).hostname, port: Number(new URL(host).port) })
    const image = config.SANDBOX_IMAGE !== '' ? config.SANDBOX_IMAGE : await ensureSandboxImage({ docker: engine })
    // an outer uid per sandbox: RLIMIT_NPROC then counts one sandbox's processes, not all of them
    return dockerDriver({
      ...(host === undefined ? {} : { host }),
      socketPath,
      image,
      ...(config.SANDBOX_UID_BASE > 0 ? { uidBase: config.SANDBOX_UID_BASE } : {}),
    })
  }
  return bubblewrapDriver({ python: config.SANDBOX_PYTHON, uidBase: config.SANDBOX_UID_BASE })
}

export function disabledError(): AppError {
  return new AppError(
    422,
    'sandbox.disabled',
    'sandbox executions are disabled on this platform (SANDBOX_EXECUTOR=disabled); only trusted shared_pool functions run',
  )
}

/**
 * Runs one execution in a fresh sandbox and destroys it (single_use and k8s_pod). The request is
 * written at once, not after the runner's `ready`: it waits in the pipe while the sandbox starts,
 * which saves a round trip on the critical path (a runner that never gets ready fails the exec).
 * A `singleUse` spec's runner runs the execution in its own process and the time limit is kept
 * here (`execOnce`); a timed-out sandbox is destroyed below like any other.
 */
export async function runOnce(
  driver: SandboxDriver,
  spec: SandboxSpec,
  req: ExecRequest,
  signal?: AbortSignal,
): Promise<ExecOutcome> {
  const proc = await driver.start(spec)
  const onAbort = () => void proc.destroy().catch(() => undefined)
  signal?.addEventListener('abort', onAbort, { once: true })
  try {
    if (signal?.aborted === true) throw abortReason(signal)
    const ch = openChannel(proc)
    return await (spec.singleUse === true ? ch.execOnce(req) : ch.exec(req))
  } catch (err) {
    throw signal?.aborted === true ? abortReason(signal) : err
  } finally {
    signal?.removeEventListener('abort', onAbort)
    // the caller has its answer; tearing the sandbox down happens off its path
    proc.destroy().catch(() => undefined)
  }
}

function createSharedWorkers(o: {
  driver: SandboxDriver
  spec: (id: string) => SandboxSpec
  count: number
  log: Logger
}): SharedWorkers {
  interface W {
    id: string
    proc: SandboxProcess
    channel: RunnerChannel
    executions: number
    startedAt: string
  }
  const workers: (W | Promise<W>)[] = []
  let next = 0
  let closed = false
  const start = async (): Promise<W> => {
    const id = randomUUID().slice(0, 12)
    const proc = await o.driver.start(o.spec(id))
    const channel = openChannel(proc)
    await channel.ready
    return { id, proc, channel, executions: 0, startedAt: new Date().toISOString() }
  }
  const add = () => {
    const p = start()
    p.catch((err: unknown) => o.log.error({ err }, 'starting a shared worker failed'))
    workers.push(p)
    const settle = async () => {
      const w = await p
      const i = workers.indexOf(p)
      if (i >= 0) workers[i] = w
    }
    settle().catch(() => undefined)
  }
  const settled = (): W[] => workers.filter((w): w is W => !(w instanceof Promise))
  for (let i = 0; i < o.count; i++) add()
  return {
    async run(req) {
      if (closed) throw new SandboxBroken('shared workers are closed')
      if (workers.length === 0) throw new SandboxBroken('no shared workers (DEFAULT_WORKER_COUNT=0)')
      for (let tries = 0; tries < workers.length + 1; tries++) {
        const idx = next++ % workers.length
        const entry = workers[idx]
        if (entry === undefined) continue
        let w: W
        try {
          w = await entry
        } catch {
          // a worker that failed to start is replaced and the next one tried
          workers.splice(workers.indexOf(entry), 1)
          add()
          continue
        }
        if (w.channel.broken) {
          const i = workers.indexOf(w)
          if (i >= 0) workers.splice(i, 1)
          void w.proc.destroy()
          add()
          continue
        }
        w.executions++
        return w.channel.exec(req)
      }
      throw new SandboxBroken('no shared worker is available')
    },
    count: () => workers.length,
    list: () =>
      settled().map((w) => ({
        name: w.proc.name,
        inflight: w.channel.inflight,
        executions: w.executions,
        started_at: w.startedAt,
      })),
    async scale(target) {
      const previous = workers.length
      if (target >= previous) {
        for (let i = previous; i < target; i++) add()
        return { action: 'scale_up', previous_count: previous, current_count: workers.length, added: target - previous }
      }
      const removed = workers.splice(target)
      await Promise.all(removed.map(async (w) => (await w).proc.destroy().catch(() => undefined)))
      return { action: 'scale_down', previous_count: previous, current_count: workers.length, removed: removed.length }
    },
    async reload() {
      const total = workers.length
      const old = workers.splice(0)
      let success = 0
      let failed = 0
      for (const w of old) {
        await (async () => (await w).proc.destroy())().catch(() => undefined)
        try {
          const fresh = await start()
          workers.push(fresh)
          success++
        } catch {
          failed++
        }
      }
      return { total_workers: total, success, failed }
    },
    async restart(name) {
      const w = settled().find((x) => x.proc.name === name)
      if (w === undefined) return false
      workers.splice(workers.indexOf(w), 1)
      await w.proc.destroy()
      add()
      return true
    },
    async close() {
      closed = true
      await Promise.all(workers.splice(0).map(async (w) => (await w).proc.destroy().catch(() => undefined)))
    },
  }
}

export async function createSandboxExecutor(
  config: Config,
  log: Logger,
  o: { packagesDir?: string | undefined } = {},
): Promise<SandboxExecutor> {
  const limits = limitsOf(config)
  let packagesDir = o.packagesDir
  const spec =
    (mode: 'exclusive' | 'shared', network: boolean) =>
    (id: string): SandboxSpec => ({ id, mode, limits, network, ...(packagesDir === undefined ? {} : { packagesDir }) })
  let pool: WarmPool | null = null
  let untrusted: ((req: ExecRequest, signal?: AbortSignal) => Promise<ExecOutcome>) | null = null
  let driverName = 'none'
  const closers: (() => Promise<void>)[] = []

  if (config.SANDBOX_EXECUTOR !== 'disabled') {
    let driver: SandboxDriver
    if (config.SANDBOX_EXECUTOR === 'k8s_pod') {
      const { k8sDriverFromConfig } = await import('./drivers/k8s-config.ts')
      driver = k8sDriverFromConfig(config)
    } else {
      driver = await localDriver(config)
    }
    const ok = await driver.check()
    driverName = driver.name
    closers.push(() => driver.close())
    if (!ok.ok) {
      // Executions fail with the reason rather than the whole worker refusing to start.
      const reason = `sandbox driver ${driver.name} cannot run here: ${ok.reason}`
      log.error(reason)
      untrusted = () => Promise.reject(new Error(`SandboxUnavailable: ${reason}`))
    } else if (config.SANDBOX_EXECUTOR === 'pool') {
      const p = createWarmPool({
        name: 'sandbox',
        driver,
        spec: spec('exclusive', false),
        minSize: config.SANDBOX_MIN_SIZE,
        maxSize: config.SANDBOX_MAX_SIZE,
        minIdle: config.SANDBOX_MIN_IDLE,
        maxExecutions: config.SANDBOX_MAX_EXECUTIONS,
        healthIntervalMs: config.SANDBOX_HEALTH_INTERVAL_SECONDS * 1000,
        idleTimeoutMs: config.FUNCTION_CONTAINER_IDLE_TIMEOUT * 1000,
        log,
      })
      pool = p
      untrusted = (req, signal) => p.run(req, signal)
      closers.unshift(() => p.close())
    } else {
      const single = spec('exclusive', false)
      // single_use: the runner runs the one execution in its own process (no fork, no cleanup);
      // k8s_pod runs the exclusive runner as the pod image has it
      const singleUse = config.SANDBOX_EXECUTOR === 'single_use'
      untrusted = (req, signal) => runOnce(driver, { ...single(randomUUID().slice(0, 12)), singleUse }, req, signal)
    }
  }

  // Trusted workers start on first use: most deployments never run a shared_pool function.
  let shared: SharedWorkers | null = null
  const sharedWorkers = (): SharedWorkers => {
    if (shared !== null) return shared
    if (config.TRUSTED_EXECUTOR === 'inprocess') {
      shared = createSharedWorkers({
        driver: processDriver({ python: config.SANDBOX_PYTHON }),
        spec: spec('shared', true),
        count: 1,
        log,
      })
    } else {
      shared = createSharedWorkers({
        driver: bubblewrapDriver({ python: config.SANDBOX_PYTHON, uidBase: config.SANDBOX_UID_BASE }),
        spec: spec('shared', true),
        count: config.DEFAULT_WORKER_COUNT,
        log,
      })
    }
    return shared
  }

  return {
    pool,
    get shared() {
      return sharedWorkers()
    },
    sharedStarted: () => shared !== null,
    sharedCount: () =>
      shared !== null ? shared.count() : config.TRUSTED_EXECUTOR === 'inprocess' ? 1 : config.DEFAULT_WORKER_COUNT,
    async run(req, { trusted, signal }) {
      const go = (): Promise<ExecOutcome> => {
        if (trusted) return sharedWorkers().run(req)
        if (untrusted === null) throw disabledError()
        return untrusted(req, signal)
      }
      if (!tracing.on) return go()
      // the run's span (tracing on): a child of the job's, as long as the sandbox takes to answer
      const span = startSpan('sandbox.run', {
        attributes: {
          'sandbox.executor': trusted ? 'shared' : config.SANDBOX_EXECUTOR,
          'sandbox.driver': driverName,
          'sandbox.trusted': trusted,
          'code.function': req.name,
        },
      })
      try {
        const outcome = await go()
        if (!outcome.ok) span?.setAttribute('sandbox.error_type', outcome.error.type)
        return outcome
      } catch (err) {
        span?.fail(err)
        throw err
      } finally {
        span?.end()
      }
    },
    stats() {
      const base: PoolStats = pool?.stats() ?? {
        idle: 0,
        in_use: 0,
        starting: 0,
        total: 0,
        min_size: 0,
        max_size: 0,
        waiting: 0,
        executions: 0,
        recycled: 0,
        destroyed_on_error: 0,
      }
      return { ...base, executor: config.SANDBOX_EXECUTOR, driver: driverName }
    },
    setPackagesDir(dir) {
      packagesDir = dir
    },
    async close() {
      for (const c of closers) await c().catch(() => undefined)
      if (shared !== null) await shared.close()
    },
  }
}
