import { hostname } from 'node:os'
import { Kvm, type KV } from '@nats-io/kv'
import type { Logger } from '../kernel/log.ts'
import type { NatsConnection } from './nats.ts'
import type { NatsNames } from './nats-names.ts'
import { kvKeys } from './jetstream.ts'

/*
 * Membership through the WORKERS bucket (history 1, TTL 30 s since the last write):
 * every process writes `<role>.<nodeId>` every 10 s; a key that is gone means a dead process.
 * NATS 2.9 emits no event when a key expires, so readers list the keys instead of watching
 *. Used by job workers (queue admin, health) and actor hosts (rendezvous
 * hashing over the live members).
 */
export const HEARTBEAT_INTERVAL_MS = 10_000

export interface Member {
  role: string
  nodeId: string
  /** What the process reported about itself in its last beat. */
  info: Record<string, unknown>
  /** Wall-clock time of the last beat (ISO 8601). */
  last_seen: string
  /** The process behind the beat (absent in beats of older versions): what the system health sums per service. */
  process?: ProcessStats
}

export interface ProcessStats {
  host: string
  pid: number
  uptime_seconds: number
  /** CPU time used since the previous sample of this heartbeat (the first: since the process started), as a percent of one core. */
  cpu_percent: number
  rss_bytes: number
  heap_used_bytes: number
}

/** Samples shorter than this keep the previous percent: a beat written on a change (sandbox) can follow another by milliseconds. */
const MIN_CPU_WINDOW_MS = 1_000

/**
 * process.cpuUsage and memoryUsage, read per beat (microseconds): the CPU percent over the time
 * since the last sample, the first one since the process started (performance.now() and
 * process.cpuUsage() both count from there).
 */
function processSampler(): () => ProcessStats {
  let last = { at: 0, cpu: { user: 0, system: 0 } }
  let percent = 0
  return () => {
    const now = performance.now()
    if (now - last.at >= MIN_CPU_WINDOW_MS) {
      const used = process.cpuUsage(last.cpu)
      percent = Math.round(((used.user + used.system) / 1000 / (now - last.at)) * 1000) / 10
      last = { at: now, cpu: process.cpuUsage() }
    }
    const mem = process.memoryUsage()
    return {
      host: hostname(),
      pid: process.pid,
      uptime_seconds: Math.round(process.uptime()),
      cpu_percent: percent,
      rss_bytes: mem.rss,
      heap_used_bytes: mem.heapUsed,
    }
  }
}

export interface Heartbeat {
  /** Writes a beat now (also done on the interval). */
  beat(): Promise<void>
  /** Stops beating and deletes the key, so peers see the departure at once. */
  stop(): Promise<void>
}

export async function workersBucket(nc: NatsConnection, names: NatsNames): Promise<KV> {
  return new Kvm(nc).open(names.bucket('WORKERS'))
}

export function startHeartbeat(opts: {
  kv: KV
  role: string
  nodeId: string
  info: () => Record<string, unknown>
  log: Logger
  intervalMs?: number
}): Heartbeat {
  const key = `${opts.role}.${opts.nodeId}`
  let stopped = false
  const sample = processSampler()
  const beat = async (): Promise<void> => {
    if (stopped) return
    const value: Member = {
      role: opts.role,
      nodeId: opts.nodeId,
      info: opts.info(),
      last_seen: new Date().toISOString(),
      process: sample(),
    }
    await opts.kv.put(key, JSON.stringify(value))
  }
  const timer = setInterval(() => {
    beat().catch((err: unknown) => opts.log.warn({ err, key }, 'heartbeat write failed'))
  }, opts.intervalMs ?? HEARTBEAT_INTERVAL_MS)
  timer.unref()
  return {
    beat,
    async stop() {
      stopped = true
      clearInterval(timer)
      await opts.kv.delete(key).catch(() => undefined)
    },
  }
}

/** Live members, optionally of one role (`fn`, `agent`, `actors`, …). */
export async function listMembers(kv: KV, role?: string): Promise<Member[]> {
  const out: Member[] = []
  for (const key of await kvKeys(kv, role === undefined ? '>' : `${role}.>`)) {
    const entry = await kv.get(key)
    if (entry === null || entry.operation !== 'PUT' || entry.length === 0) continue
    out.push(entry.json<Member>())
  }
  return out.sort((a, b) => (a.role + a.nodeId).localeCompare(b.role + b.nodeId))
}
