import type { KV } from '@nats-io/kv'
import type { HealthService, HealthWarning, SystemHealth } from '../../schemas/system.ts'
import type { ServiceBase } from '../feature/define.ts'
import type { HealthSource } from '../feature/health.ts'
import { POOLS } from '../jobs/job-state.ts'
import { workersBucket } from '../platform/heartbeat.ts'
import { actorsService } from './health-actors.ts'
import { hostProbe } from './health-host.ts'
import { natsDown, natsService, postgresDown, postgresService } from './health-infra.ts'
import { jobPoolServices } from './health-jobs.ts'
import { byLevel, healthWarnings } from './health-rules.ts'
import { reasonOf, unknownService, withDeadline } from './health-service.ts'

/*
 * `GET /api/v1/system/health`: every probe at once, each bounded by PROBE_TIMEOUT_MS, so the
 * answer comes within about that long whatever is down. A probe that fails or does not answer
 * becomes its services' row (`down` for NATS and Postgres, `unknown` for the others) with the
 * reason; nothing a probe does makes the endpoint fail. Services: the infrastructure first (NATS,
 * Postgres), then the application services sorted by name, the features' contributions
 * (src/feature/health.ts) among them. Warnings: the rules of health-rules.ts, the pools', then the
 * contributions', most severe first.
 */
export const PROBE_TIMEOUT_MS = 3_000

export interface HealthDeps {
  base: ServiceBase
  checks: readonly HealthSource[]
  /** Only to test the timeout path; PROBE_TIMEOUT_MS otherwise. */
  timeoutMs?: number
}

interface Part {
  services: HealthService[]
  warnings: HealthWarning[]
}

const INFRA_ORDER = ['nats', 'postgres']

export function orderServices(services: readonly HealthService[]): HealthService[] {
  const rank = (s: HealthService): number => {
    const i = INFRA_ORDER.indexOf(s.name)
    return s.kind === 'infrastructure' ? (i === -1 ? INFRA_ORDER.length : i) : INFRA_ORDER.length + 1
  }
  return [...services].sort((a, b) => rank(a) - rank(b) || a.name.localeCompare(b.name))
}

export async function systemHealth(d: HealthDeps): Promise<SystemHealth> {
  const started = Date.now()
  const { nc, names, db, config } = d.base
  const ms = d.timeoutMs ?? PROBE_TIMEOUT_MS
  const host = hostProbe(config.DATA_DIR, ms)
  const bounded = <T>(what: string, work: () => Promise<T>): Promise<T> =>
    withDeadline(Promise.resolve().then(work), ms, what)
  let workers: Promise<KV> | undefined
  const kv = () => (workers ??= workersBucket(nc, names))
  const only = (s: HealthService): Part => ({ services: [s], warnings: [] })

  const parts: Promise<Part>[] = [
    bounded('nats', () => natsService(nc)).then(only, (err: unknown) => only(natsDown(err))),
    bounded('postgres', () => postgresService(db)).then(only, (err: unknown) => only(postgresDown(err))),
    bounded('job pools', async () =>
      jobPoolServices({ nc, names, workers: await kv(), heartbeatMs: config.QUEUE_HEARTBEAT_SECONDS * 1000 }),
    ).catch((err: unknown) => ({
      services: POOLS.map((p) => unknownService(`workers.${p}`, 'application', reasonOf(err))),
      warnings: [],
    })),
    bounded('actors', async () => actorsService({ nc, names, workers: await kv() })).then(only, (err: unknown) =>
      only(unknownService('actors', 'application', reasonOf(err))),
    ),
    ...d.checks.map((c) =>
      bounded(c.feature, () => c.check(d.base)).then(
        (r): Part => ({ services: r.services ?? [], warnings: r.warnings ?? [] }),
        (err: unknown) => only(unknownService(c.feature, 'application', reasonOf(err))),
      ),
    ),
  ]
  const all = await Promise.all(parts)
  const services = orderServices(all.flatMap((p) => p.services))
  const hostNow = await host.read()
  const warnings = byLevel([...healthWarnings(services, hostNow), ...all.flatMap((p) => p.warnings)])
  const top = warnings[0]?.level
  return {
    status: top ?? 'ok',
    checked_at: new Date(started).toISOString(),
    duration_ms: Date.now() - started,
    services,
    host: hostNow,
    warnings,
  }
}
