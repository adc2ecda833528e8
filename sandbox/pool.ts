import { randomUUID } from 'node:crypto'
import type { Logger } from '../src/kernel/log.ts'
import { openChannel, SandboxBroken, type ExecOutcome, type ExecRequest, type RunnerChannel } from './channel.ts'
import type { SandboxDriver, SandboxProcess, SandboxSpec } from './driver.ts'

/*
 * The warm pool (SANDBOX_EXECUTOR=pool): pre-started exclusive sandboxes, taken idle, used for one
 * execution, returned. A sandbox is recycled after `maxExecutions`, destroyed at once when it
 * errors (broken protocol, died, timed out), and replaced so that at least `minIdle` stay idle
 * (never more than `maxSize` in all). Idle ones are pinged every `healthIntervalMs`; idle ones
 * above `minSize` are removed after `idleTimeoutMs`. Callers beyond `maxSize` wait in order.
 * A cancelled execution's sandbox is destroyed at once (see `run`).
 */

export interface PoolOptions {
  name: string
  driver: SandboxDriver
  spec: (id: string) => SandboxSpec
  minSize: number
  maxSize: number
  minIdle: number
  maxExecutions: number
  healthIntervalMs: number
  idleTimeoutMs: number
  log: Logger
}

interface Member {
  id: string
  name: string
  proc: SandboxProcess
  channel: RunnerChannel
  state: 'idle' | 'busy'
  executions: number
  lastUsed: number
  gen: number
}

export interface PoolStats {
  idle: number
  in_use: number
  starting: number
  total: number
  min_size: number
  max_size: number
  waiting: number
  executions: number
  recycled: number
  destroyed_on_error: number
}

export interface WarmPool {
  /**
   * Runs one execution in an idle sandbox. When `signal` aborts (the job was cancelled or timed
   * out) the sandbox is destroyed at once, not recycled: its process and everything it started
   * die, and the pool starts a fresh one in its place.
   */
  run(req: ExecRequest, signal?: AbortSignal): Promise<ExecOutcome>
  stats(): PoolStats
  names(): string[]
  /** Sets the pool size: grows now, shrinks by removing idle sandboxes only. */
  scale(
    target: number,
  ): Promise<{ action: 'scale_up' | 'scale_down'; previous: number; current: number; added?: number; removed?: number }>
  /** Replaces every idle sandbox with a fresh one (e.g. after packages were installed). */
  reload(): Promise<{ idle_containers: number; success: number; failed: number }>
  /** Destroys the named sandbox (busy ones are marked to go after their execution); false when unknown. */
  restart(name: string): Promise<boolean>
  close(): Promise<void>
}

export function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('cancelled')
}

export function createWarmPool(o: PoolOptions): WarmPool {
  const members = new Map<string, Member>()
  let starting = 0
  let minSize = o.minSize
  let maxSize = Math.max(o.maxSize, o.minSize)
  const waiters: ((m: Member) => void)[] = []
  const doomed = new Set<string>()
  let closed = false
  let executions = 0
  let recycled = 0
  let destroyedOnError = 0
  const log = o.log.child({ pool: o.name })

  const idle = () => [...members.values()].filter((m) => m.state === 'idle')

  /** Bumped by reload(): a sandbox that started with older settings (packages) is not kept. */
  let generation = 0

  async function startOne(): Promise<void> {
    starting++
    const id = randomUUID().slice(0, 12)
    const born = generation
    try {
      const proc = await o.driver.start(o.spec(id))
      const channel = openChannel(proc)
      try {
        await channel.ready
      } catch (err) {
        await proc.destroy()
        throw err
      }
      const m: Member = {
        id,
        name: proc.name,
        proc,
        channel,
        state: 'idle',
        executions: 0,
        lastUsed: Date.now(),
        gen: born,
      }
      if (closed || born !== generation) {
        await proc.destroy()
        if (!closed) setImmediate(replenish)
        return
      }
      members.set(id, m)
      // a sandbox that dies while idle is removed and replaced
      const onExit = async () => {
        await proc.exited
        if (members.get(id) === m && m.state === 'idle') {
          members.delete(id)
          destroyedOnError++
          log.warn({ sandbox: m.name }, 'idle sandbox exited; replacing it')
          replenish()
        }
      }
      void onExit()
      handOut(m)
    } finally {
      starting--
    }
  }

  function handOut(m: Member): void {
    const w = waiters.shift()
    if (w !== undefined) {
      m.state = 'busy'
      w(m)
    } else {
      m.state = 'idle'
      m.lastUsed = Date.now()
    }
  }

  function replenish(): void {
    if (closed) return
    const total = () => members.size + starting
    const want = () => Math.max(minSize - total(), o.minIdle - (idle().length + starting), waiters.length - starting)
    while (want() > 0 && total() < maxSize) {
      void startOne().catch((err: unknown) => {
        log.error({ err }, 'starting a sandbox failed')
        // fail the waiters rather than let them hang when sandboxes cannot start at all
        if (members.size === 0 && starting === 0) {
          for (const w of waiters.splice(0)) w(null as unknown as Member)
        }
      })
    }
  }

  async function destroy(
    m: Member,
    reason: 'recycle' | 'error' | 'scale' | 'reload' | 'restart' | 'cancel',
  ): Promise<void> {
    // counted once: a cancelled execution's sandbox is destroyed by the abort and again by the
    // failed exec that follows
    const known = members.delete(m.id)
    doomed.delete(m.id)
    if (known && reason === 'recycle') recycled++
    if (known && reason === 'error') destroyedOnError++
    await m.proc.destroy().catch((err: unknown) => log.warn({ err, sandbox: m.name }, 'destroying a sandbox failed'))
  }

  async function acquire(): Promise<Member> {
    // The least recently used idle sandbox: the one just returned is still cleaning up and
    // forking its next child, an older one is ready at once.
    let m: Member | undefined
    for (const x of members.values()) if (x.state === 'idle' && (m === undefined || x.lastUsed < m.lastUsed)) m = x
    if (m !== undefined) {
      m.state = 'busy'
      replenish()
      return m
    }
    const got = new Promise<Member>((resolve) => waiters.push(resolve))
    replenish()
    const member = await got
    if (member === null) throw new SandboxBroken(`no sandbox could be started (driver ${o.driver.name})`)
    return member
  }

  const health = setInterval(() => {
    const now = Date.now()
    const spare = idle()
    let removable = members.size - minSize
    for (const m of spare) {
      if (removable > 0 && now - m.lastUsed > o.idleTimeoutMs && spare.length > o.minIdle) {
        removable--
        void destroy(m, 'scale')
        continue
      }
      m.channel.ping(5_000).catch(() => {
        if (members.get(m.id) === m && m.state === 'idle') {
          log.warn({ sandbox: m.name }, 'sandbox failed its health check; replacing it')
          void destroy(m, 'error').then(replenish)
        }
      })
    }
    replenish()
  }, o.healthIntervalMs)
  health.unref()

  replenish()

  return {
    async run(req, signal) {
      if (closed) throw new SandboxBroken('the sandbox pool is closed')
      const m = await acquire()
      if (signal?.aborted === true) {
        // cancelled while it waited for a sandbox: nothing ran in this one
        handOut(m)
        throw abortReason(signal)
      }
      let cancelled = false
      const onAbort = () => {
        cancelled = true
        log.info({ sandbox: m.name }, 'execution cancelled: destroying its sandbox')
        void destroy(m, 'cancel').then(replenish)
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      let outcome: ExecOutcome
      try {
        outcome = await m.channel.exec(req)
      } catch (err) {
        await destroy(m, cancelled ? 'cancel' : 'error')
        replenish()
        throw cancelled && signal !== undefined ? abortReason(signal) : err
      } finally {
        signal?.removeEventListener('abort', onAbort)
      }
      executions++
      m.executions++
      // A timed-out or dead execution may have left the sandbox in any state: never reuse it.
      const tainted =
        !outcome.ok && (outcome.timedOut || outcome.error.type === 'ProcessDied' || outcome.error.type === 'BadResult')
      if (cancelled) await destroy(m, 'cancel')
      else if (tainted || m.channel.broken) await destroy(m, 'error')
      else if (m.executions >= o.maxExecutions) await destroy(m, 'recycle')
      else if (doomed.has(m.id) || members.size > maxSize || m.gen !== generation) await destroy(m, 'restart')
      else handOut(m)
      replenish()
      return outcome
    },
    stats() {
      const i = idle().length
      return {
        idle: i,
        in_use: members.size - i,
        starting,
        total: members.size,
        min_size: minSize,
        max_size: maxSize,
        waiting: waiters.length,
        executions,
        recycled,
        destroyed_on_error: destroyedOnError,
      }
    },
    names: () => [...members.values()].map((m) => m.name),
    async scale(target) {
      const previous = members.size + starting
      if (target >= previous) {
        minSize = target
        maxSize = Math.max(maxSize, target)
        replenish()
        return { action: 'scale_up', previous, current: target, added: target - previous }
      }
      minSize = target
      const removable = idle().slice(0, previous - target)
      await Promise.all(removable.map((m) => destroy(m, 'scale')))
      return { action: 'scale_down', previous, current: members.size + starting, removed: removable.length }
    },
    async reload() {
      generation++
      const old = idle()
      let success = 0
      let failed = 0
      for (const m of old) {
        await destroy(m, 'reload')
        try {
          await startOne()
          success++
        } catch (err) {
          failed++
          log.error({ err }, 'restarting a sandbox on reload failed')
        }
      }
      replenish()
      return { idle_containers: old.length, success, failed }
    },
    async restart(name) {
      const m = [...members.values()].find((x) => x.name === name)
      if (m === undefined) return false
      if (m.state === 'busy') doomed.add(m.id)
      else await destroy(m, 'restart')
      replenish()
      return true
    },
    async close() {
      closed = true
      clearInterval(health)
      for (const w of waiters.splice(0)) w(null as unknown as Member)
      await Promise.all([...members.values()].map((m) => destroy(m, 'scale')))
    },
  }
}
