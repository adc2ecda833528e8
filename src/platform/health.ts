import pg from 'pg'
import type { KV } from '@nats-io/kv'
import type { Logger } from '../kernel/log.ts'
import { listMembers } from './heartbeat.ts'
import type { NatsConnection } from './nats.ts'

/*
 * Background probes behind GET /health (gateway/health.ts): the route reads their last result and
 * never waits. Postgres: a `select 1` on a fresh connection every `intervalMs` (not the pool, so a
 * pool busy with slow queries does not read as an outage), only in a process that has a database
 * (resources or workers role). Workers: the WORKERS heartbeats (src/platform/heartbeat.ts), which is
 * all an edge gateway knows about them: fresh = a function, agent or sub-agent worker beat within
 * the bucket's 30 s TTL.
 */
export interface HealthMonitor {
  components(): Record<string, { ok: boolean; value: unknown }>
  stop(): void
}

const WORKER_POOLS = ['fn', 'agent', 'subagent'] as const
const FRESH_MS = 30_000

export async function startHealthMonitor(o: {
  nc: NatsConnection
  workers: KV
  databaseUrl?: string
  /** Single-node mode: whether the supervised local Postgres runs; its death shows at once, not at the next probe. */
  postgresRunning?: () => boolean
  log: Logger
  intervalMs?: number
}): Promise<HealthMonitor> {
  const intervalMs = o.intervalMs ?? 2_000
  let postgres: 'up' | 'down' = 'up'
  let workers: { status: 'ok' | 'none' | 'unknown'; pools: Record<string, number> } = { status: 'unknown', pools: {} }
  let stopped = false

  const probePostgres = async (url: string) => {
    const client = new pg.Client({
      connectionString: url,
      connectionTimeoutMillis: intervalMs,
      query_timeout: intervalMs,
    })
    client.on('error', () => undefined)
    let next: 'up' | 'down' = 'down'
    try {
      await client.connect()
      await client.query('select 1')
      next = 'up'
    } catch {
      next = 'down'
    } finally {
      await client.end().catch(() => undefined)
    }
    if (next !== postgres) o.log.warn({ postgres: next }, 'postgres health changed')
    postgres = next
  }

  const probeWorkers = async () => {
    // With NATS down the last answer stays; /health already says `down` for NATS.
    if (o.nc.isClosed()) return
    try {
      const members = await withTimeout(listMembers(o.workers), intervalMs)
      const now = Date.now()
      const pools: Record<string, number> = {}
      for (const m of members) {
        if (!(WORKER_POOLS as readonly string[]).includes(m.role) || now - Date.parse(m.last_seen) > FRESH_MS) continue
        pools[m.role] = (pools[m.role] ?? 0) + 1
      }
      workers = { status: Object.keys(pools).length > 0 ? 'ok' : 'none', pools }
    } catch {
      workers = { ...workers, status: 'unknown' }
    }
  }

  const probe = async () => {
    await Promise.all([o.databaseUrl === undefined ? undefined : probePostgres(o.databaseUrl), probeWorkers()])
  }
  await probe()
  let timer: NodeJS.Timeout | undefined
  const loop = () => {
    timer = setTimeout(() => {
      void probe().finally(() => {
        if (!stopped) loop()
      })
    }, intervalMs)
    timer.unref()
  }
  loop()

  return {
    components() {
      const out: Record<string, { ok: boolean; value: unknown }> = {}
      if (o.databaseUrl !== undefined) {
        const up = postgres === 'up' && (o.postgresRunning?.() ?? true)
        out.postgres = { ok: up, value: up ? 'up' : 'down' }
      }
      // `unknown` (NATS just came back, the listing timed out) does not fail the check on its own.
      out.workers = { ok: workers.status !== 'none', value: workers }
      return out
    },
    stop() {
      stopped = true
      clearTimeout(timer)
    },
  }
}

async function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('timed out')), ms))),
    ])
  } finally {
    clearTimeout(timer)
  }
}
