import type { HealthHost, HealthService, HealthWarning } from '../../schemas/system.ts'

/*
 * When the health endpoint warns, as one table: operators read the thresholds in
 * docs/operations.md#health, tests import them. A count is compared with `>` (a backlog of 50 is
 * fine, 51 is not), a percent with `>` as well.
 */
export const HEALTH_THRESHOLDS = {
  /** Jobs waiting in a pool (its consumer's num_pending) above this: warning. */
  queueBacklog: 50,
  /** Jobs in the dead letter queue above this: warning. */
  deadLetters: 0,
  /** DATA_DIR's disk and the host's memory, used percent above this: warning. */
  warningPercent: 90,
  /** … above this (and not above `warningPercent`): info. */
  infoPercent: 75,
} as const

const round1 = (n: number): number => Math.round(n * 10) / 10

/** critical: the infrastructure down; warning: an application service down or unknown. */
function serviceWarnings(services: readonly HealthService[]): HealthWarning[] {
  const out: HealthWarning[] = []
  const pools = services.filter((s) => s.name.startsWith('workers.'))
  const noWorkers = pools.length > 0 && pools.every((s) => s.status === 'down')
  if (noWorkers)
    out.push({
      level: 'critical',
      service: 'workers',
      message: 'no queue workers: no job of any pool can run',
      value: 0,
      threshold: 1,
    })
  for (const s of services) {
    if (s.status === 'up') continue
    if (noWorkers && pools.includes(s)) continue
    const infra = s.kind === 'infrastructure'
    out.push({
      level: infra ? 'critical' : 'warning',
      service: s.name,
      message: `${s.name} is ${s.status}${s.reason === null ? '' : `: ${s.reason}`}`,
      value: s.instances ?? 0,
      threshold: 1,
    })
  }
  return out
}

/** A used percent against the two thresholds: warning above 90, info above 75, nothing below. */
export function percentWarning(what: string, percent: number | null, service?: string): HealthWarning[] {
  if (percent === null || percent <= HEALTH_THRESHOLDS.infoPercent) return []
  const warning = percent > HEALTH_THRESHOLDS.warningPercent
  return [
    {
      level: warning ? 'warning' : 'info',
      ...(service === undefined ? {} : { service }),
      message: `${what} ${String(round1(percent))} % used`,
      value: round1(percent),
      threshold: warning ? HEALTH_THRESHOLDS.warningPercent : HEALTH_THRESHOLDS.infoPercent,
    },
  ]
}

/** The platform's own rules over the services and the host (contributed warnings come as they are). */
export function healthWarnings(services: readonly HealthService[], host: HealthHost): HealthWarning[] {
  return [
    ...serviceWarnings(services),
    ...percentWarning(`disk of ${host.disk.path}:`, host.disk.used_percent),
    ...percentWarning('memory:', host.memory.used_percent),
  ]
}

const ORDER: Record<HealthWarning['level'], number> = { critical: 0, warning: 1, info: 2 }

/** Most severe first; within a level, in the services' order (a stable sort). */
export const byLevel = (ws: readonly HealthWarning[]): HealthWarning[] =>
  [...ws].sort((a, b) => ORDER[a.level] - ORDER[b.level])
