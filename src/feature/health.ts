import type { HealthService, HealthWarning } from '../../schemas/system.ts'
import type { Member, ProcessStats } from '../platform/heartbeat.ts'
import type { ServiceBase } from './define.ts'

export type { HealthService, HealthWarning }

/*
 * What a feature adds to `GET /api/v1/system/health` (src/system/health.ts): its own services and
 * warnings, shaped as the endpoint answers them (schemas/system.ts). A feature declares
 * `health(ctx)` on its Feature object; the endpoint calls it on every request, in the resources
 * role, under the same timeout as its own probes. A contribution that throws or does not answer in
 * time shows as a service named after the feature with status `unknown` and the reason, so the
 * endpoint always answers. Keep it cheap (reads from NATS or memory, no scans): operators poll it.
 */
export interface HealthContribution {
  /** Listed after the infrastructure, sorted by name with the platform's own services. */
  services?: HealthService[]
  /** Same levels as the platform's: `critical`, `warning`, `info`, with the value and threshold that set each off. */
  warnings?: HealthWarning[]
}

export type HealthCheck = (ctx: ServiceBase) => Promise<HealthContribution>

/** One feature's contribution, as `featureHealthChecks` gathers them. */
export interface HealthSource {
  feature: string
  check: HealthCheck
}

/** A service row: what is not given is unknown (null) or empty. */
export function serviceRow(
  s: Pick<HealthService, 'name' | 'kind' | 'status' | 'health'> & Partial<HealthService>,
): HealthService {
  // in the answer's order: who, how it is, then the numbers
  return {
    name: s.name,
    kind: s.kind,
    status: s.status,
    health: s.health,
    reason: s.reason ?? null,
    version: s.version ?? null,
    instances: s.instances ?? null,
    uptime_seconds: s.uptime_seconds ?? null,
    cpu_percent: s.cpu_percent ?? null,
    memory_bytes: s.memory_bytes ?? null,
    details: s.details ?? {},
  }
}

/**
 * Uptime (the longest-running process), CPU and memory (summed) of the distinct processes behind
 * some heartbeats: one process running several pool workers beats once per worker, counted once.
 */
export function processTotals(
  members: readonly Member[],
): Pick<HealthService, 'uptime_seconds' | 'cpu_percent' | 'memory_bytes'> & { processes: number } {
  const byProcess = new Map<string, ProcessStats>()
  for (const m of members)
    if (m.process !== undefined) byProcess.set(`${m.process.host}:${String(m.process.pid)}`, m.process)
  const ps = [...byProcess.values()]
  if (ps.length === 0) return { uptime_seconds: null, cpu_percent: null, memory_bytes: null, processes: 0 }
  return {
    uptime_seconds: Math.max(...ps.map((p) => p.uptime_seconds)),
    cpu_percent: Math.round(ps.reduce((a, p) => a + p.cpu_percent, 0) * 10) / 10,
    memory_bytes: ps.reduce((a, p) => a + p.rss_bytes, 0),
    processes: ps.length,
  }
}
