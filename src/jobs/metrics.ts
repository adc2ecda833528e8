import { jetstreamManager } from '@nats-io/jetstream'
import { Type as T } from '@sinclair/typebox'
import { sql, type Db } from '../platform/db.ts'
import { jobConsumerAckPending, jobConsumerPending, jobsByState, onScrape } from '../platform/metrics.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { scrapeSample } from '../platform/scrape-sample.ts'
import { anyRows, rowType } from '../platform/typed-rows.ts'
import { JOB_STATUSES, POOLS } from './job-state.ts'
import { poolConsumerName } from './provision.ts'

/*
 * The job system's gauges, read at scrape (src/platform/metrics.ts): each pool consumer's backlog
 * (num_pending, num_ack_pending) and the mirror's jobs by pool and state. Both are cluster-wide
 * (every resources process reports the same values: aggregate with max, not sum), cached for
 * MAX_AGE_MS so a one-second scrape interval costs one consumer info per pool and one grouped count
 * every few seconds, and a scrape waits at most TIMEOUT_MS for them.
 */
const MAX_AGE_MS = 5_000
const TIMEOUT_MS = 1_000

const StateCountRow = rowType(
  T.Object({ pool: T.String(), status: T.String(), n: T.Integer() }, { title: 'execution count by pool and state' }),
)

/** Registers the job gauges' collector; returns its removal (for the role's stop). */
export function scrapeJobMetrics(d: { nc: NatsConnection; names: NatsNames; db: Db }): () => Promise<void> {
  const backlog = scrapeSample(
    async () => {
      const jsm = await jetstreamManager(d.nc)
      return Promise.all(
        POOLS.map(async (pool) => {
          const info = await jsm.consumers.info(d.names.stream('JOBS'), poolConsumerName(pool))
          return { pool, pending: info.num_pending, ackPending: info.num_ack_pending }
        }),
      )
    },
    { maxAgeMs: MAX_AGE_MS, timeoutMs: TIMEOUT_MS },
  )
  const states = scrapeSample(
    () =>
      anyRows(
        d.db,
        StateCountRow,
        // the index on (status, created_at) bounds the scan to the window; the same window as /api/v1/queue/stats
        sql.unsafe`select pool, status, count(*)::int as n from executions where created_at > now() - interval '24 hours' group by pool, status`,
      ),
    { maxAgeMs: MAX_AGE_MS, timeoutMs: TIMEOUT_MS },
  )
  return onScrape(async () => {
    const [queues, rows] = await Promise.all([backlog(), states()])
    for (const q of queues ?? []) {
      jobConsumerPending.set({ pool: q.pool }, q.pending)
      jobConsumerAckPending.set({ pool: q.pool }, q.ackPending)
    }
    if (rows === undefined) return
    // every pool and state, zeros included: a rate or an alert on a state sees it before its first job
    for (const pool of POOLS) for (const state of JOB_STATUSES) jobsByState.set({ pool, state }, 0)
    for (const r of rows) jobsByState.set({ pool: r.pool, state: r.status }, r.n)
  })
}
