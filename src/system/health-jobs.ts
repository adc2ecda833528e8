import { jetstreamManager } from '@nats-io/jetstream'
import type { KV } from '@nats-io/kv'
import { POOLS, type Pool } from '../jobs/job-state.ts'
import { poolConsumerName } from '../jobs/provision.ts'
import type { HealthService, HealthWarning } from '../../schemas/system.ts'
import { listMembers } from '../platform/heartbeat.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { HEALTH_THRESHOLDS } from './health-rules.ts'
import { processTotals, serviceRow } from '../feature/health.ts'

/*
 * The job pools (`workers.fn`, `workers.agent`, `workers.subagent`), each from NATS alone: its
 * workers' heartbeats (WORKERS `<pool>.<node>`, fresh within three of QUEUE_HEARTBEAT_SECONDS:
 * a worker killed with -9 leaves its key for the bucket's 30 s TTL), its backlog (the pool
 * consumer's num_pending: jobs not delivered yet; num_ack_pending: being run) and its dead
 * letters (the DLQ stream's messages on `dlq.<pool>.>`: moved there after the last attempt,
 * src/jobs/dead-letter.ts; a retry or a flush removes them).
 */
export async function jobPoolServices(d: {
  nc: NatsConnection
  names: NatsNames
  workers: KV
  heartbeatMs: number
}): Promise<{ services: HealthService[]; warnings: HealthWarning[] }> {
  const jsm = await jetstreamManager(d.nc)
  const now = Date.now()
  const one = async (pool: Pool): Promise<{ service: HealthService; warnings: HealthWarning[] }> => {
    const [members, consumer, dlq] = await Promise.all([
      listMembers(d.workers, pool),
      jsm.consumers.info(d.names.stream('JOBS'), poolConsumerName(pool)).catch(() => null),
      jsm.streams.info(d.names.stream('DLQ'), { subjects_filter: d.names.subject(`dlq.${pool}.>`) }),
    ])
    const live = members.filter((m) => now - Date.parse(m.last_seen) <= 3 * d.heartbeatMs)
    const backlog = consumer?.num_pending ?? 0
    const deadLetters = Object.values(dlq.state.subjects ?? {}).reduce((a, n) => a + n, 0)
    const name = `workers.${pool}`
    const num = (v: unknown): number => (typeof v === 'number' ? v : 0)
    const busy = backlog > HEALTH_THRESHOLDS.queueBacklog
    const { processes: _p, ...usage } = processTotals(live)
    const service = serviceRow({
      name,
      kind: 'application',
      status: live.length > 0 ? 'up' : 'down',
      health: live.length === 0 ? 'unhealthy' : busy ? 'degraded' : 'healthy',
      reason:
        live.length === 0 ? `no live worker of the ${pool} pool` : busy ? `${String(backlog)} jobs waiting` : null,
      instances: live.length,
      ...usage,
      details: {
        pool,
        slots: live.reduce((a, m) => a + num(m.info['slots']), 0),
        inflight: live.reduce((a, m) => a + num(m.info['inflight']), 0),
        backlog,
        executing: consumer?.num_ack_pending ?? 0,
        dead_letters: deadLetters,
        workers: live.map((m) => ({
          node_id: m.nodeId,
          host: m.process?.host ?? m.info['host'] ?? null,
          pid: m.process?.pid ?? m.info['pid'] ?? null,
          slots: num(m.info['slots']),
          inflight: num(m.info['inflight']),
          last_seen: m.last_seen,
        })),
      },
    })
    const warnings: HealthWarning[] = []
    if (busy)
      warnings.push({
        level: 'warning',
        service: name,
        message: `${String(backlog)} jobs waiting in the ${pool} pool`,
        value: backlog,
        threshold: HEALTH_THRESHOLDS.queueBacklog,
      })
    if (deadLetters > HEALTH_THRESHOLDS.deadLetters)
      warnings.push({
        level: 'warning',
        service: name,
        message: `${String(deadLetters)} ${deadLetters === 1 ? 'job' : 'jobs'} of the ${pool} pool in the dead letter queue (GET /api/v1/queue/dlq)`,
        value: deadLetters,
        threshold: HEALTH_THRESHOLDS.deadLetters,
      })
    return { service, warnings }
  }
  const rows = await Promise.all(POOLS.map(one))
  return { services: rows.map((r) => r.service), warnings: rows.flatMap((r) => r.warnings) }
}
