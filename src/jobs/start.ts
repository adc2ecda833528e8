import { randomUUID } from 'node:crypto'
import { jetstream } from '@nats-io/jetstream'
import type { BoundRoute } from '../api/bind.ts'
import type { Config } from '../kernel/config.ts'
import type { Logger } from '../kernel/log.ts'
import type { Db } from '../platform/db.ts'
import { workersBucket } from '../platform/heartbeat.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { announceCancel } from './cancel-notice.ts'
import type { EnqueueDeps } from './enqueue.ts'
import { openJobStateStore, POOLS, type JobState, type JobStateStore, type Pool } from './job-state.ts'
import { flushStuckJobs } from './maintenance.ts'
import { startMirror, type JobFinishedListener } from './mirror.ts'
import { provisionJobs } from './provision.ts'
import { openResultStore, type ResultStore } from './result-store.ts'
import { jobHandlers } from './service.ts'
import { startTimerDispatcher } from './timers.ts'
import { createTopLevelGate, topLevelCap } from './nested-reserve.ts'
import { createUserShare, userShareCap } from './user-share.ts'
import { startJobWorker, type JobExecutor, type JobWorker } from './worker.ts'

/*
 * Composition of the job system for the two process roles that use it:
 * - the service side (with the database): endpoint handlers, the Postgres mirror + execution
 *   events, the delayed-job dispatcher and the periodic stuck-job flush;
 * - the workers: per pool, QUEUE_*_REPLICAS workers of QUEUE_*_CONCURRENCY slots, for every pool
 *   that has an executor registered.
 */
export const maxDepthOf = (config: Config): number => config.MAX_EXECUTION_DEPTH

/**
 * The longest delay of a delayed job: its JOB_STATE entry, written at the enqueue, lives
 * JOB_RESULT_TTL_HOURS (the bucket's TTL) and must outlast the delay; a minute is kept for the
 * timer's dispatch.
 */
export const maxDelayOf = (config: Config): number => config.JOB_RESULT_TTL_HOURS * 3600 - 60

export async function provisionJobLayout(
  nc: NatsConnection,
  names: NatsNames,
  config: Config,
  log: Logger,
): Promise<void> {
  await provisionJobs(
    nc,
    names,
    { ackWaitMs: config.QUEUE_ACK_WAIT_SECONDS * 1000, resultTtlMs: config.JOB_RESULT_TTL_HOURS * 3600_000 },
    log,
  )
}

export interface JobService {
  handlers: BoundRoute[]
  enqueue: EnqueueDeps
  store: JobStateStore
  results: ResultStore
  close(): Promise<void>
}

export async function startJobService(o: {
  nc: NatsConnection
  names: NatsNames
  db: Db
  config: Config
  log: Logger
  /** Told once an ended job's row is written (the functions feature's execution callbacks). */
  onFinished?: readonly JobFinishedListener[]
}): Promise<JobService> {
  const log = o.log.child({ mod: 'jobs' })
  const store = await openJobStateStore(o.nc, o.names)
  const results = await openResultStore(o.nc, o.names)
  const enqueue: EnqueueDeps = {
    js: jetstream(o.nc),
    names: o.names,
    store,
    db: o.db,
    maxDepth: maxDepthOf(o.config),
    maxDelaySeconds: maxDelayOf(o.config),
  }
  const mirror = await startMirror({
    nc: o.nc,
    names: o.names,
    db: o.db,
    results,
    config: o.config,
    log,
    ...(o.onFinished === undefined ? {} : { onFinished: o.onFinished }),
  })
  const timers = startTimerDispatcher({ db: o.db, deps: enqueue, log })
  const flush = setInterval(() => {
    flushStuckJobs(o.db, store, o.config.STUCK_JOB_HOURS, log, (id) => announceCancel(o.nc, o.names, id)).catch(
      (err: unknown) => log.warn({ err }, 'periodic stuck-job flush failed'),
    )
  }, 5 * 60_000)
  flush.unref()
  const handlers = jobHandlers({
    nc: o.nc,
    names: o.names,
    db: o.db,
    store,
    results,
    workers: await workersBucket(o.nc, o.names),
    enqueue,
    stuckHours: o.config.STUCK_JOB_HOURS,
    log,
  })
  return {
    handlers,
    enqueue,
    store,
    results,
    async close() {
      clearInterval(flush)
      await timers.stop()
      await mirror.stop()
    },
  }
}

const POOL_SIZING: Record<Pool, (c: Config) => { replicas: number; concurrency: number; timeoutMs: number }> = {
  fn: (c) => ({
    replicas: c.QUEUE_WORKER_REPLICAS,
    concurrency: c.QUEUE_FUNCTION_CONCURRENCY,
    timeoutMs: c.FUNCTION_TIMEOUT * 1000,
  }),
  agent: (c) => ({
    replicas: c.QUEUE_AGENT_REPLICAS,
    concurrency: c.QUEUE_AGENT_CONCURRENCY,
    timeoutMs: c.AGENT_JOB_TIMEOUT * 1000,
  }),
  subagent: (c) => ({
    replicas: c.QUEUE_AGENT_SUB_REPLICAS,
    concurrency: c.QUEUE_AGENT_SUB_CONCURRENCY,
    timeoutMs: c.AGENT_JOB_TIMEOUT * 1000,
  }),
}

export async function startJobWorkers(o: {
  nc: NatsConnection
  names: NatsNames
  config: Config
  log: Logger
  executors: Partial<Record<Pool, JobExecutor>>
  /** Overrides the configured replica count (tests and the `worker` CLI run one). */
  replicas?: number
  /** Per pool: what to do when a job of a lost worker ends failed (see WorkerOptions.onAbandoned). */
  onAbandoned?: Partial<Record<Pool, (job: JobState) => Promise<void>>>
}): Promise<{ workers: JobWorker[]; stop(): Promise<void> }> {
  const store = await openJobStateStore(o.nc, o.names)
  const results = await openResultStore(o.nc, o.names)
  const workers: JobWorker[] = []
  for (const pool of POOLS) {
    const executor = o.executors[pool]
    if (executor === undefined) continue
    const size = POOL_SIZING[pool](o.config)
    const replicas = o.replicas ?? size.replicas
    // one fair-share gate for all function replicas of this process: they share its sandbox pool
    const userShare =
      pool === 'fn'
        ? createUserShare(userShareCap(o.config, replicas), o.config.QUEUE_ACK_WAIT_SECONDS * 1000)
        : undefined
    const reserveCap = pool === 'fn' ? topLevelCap(o.config, replicas) : undefined
    const topLevelGate = reserveCap === undefined ? undefined : createTopLevelGate(reserveCap)
    for (let i = 0; i < replicas; i++) {
      workers.push(
        await startJobWorker({
          nc: o.nc,
          names: o.names,
          store,
          results,
          pool,
          concurrency: size.concurrency,
          executor,
          nodeId: randomUUID().slice(0, 8),
          log: o.log,
          ackWaitMs: o.config.QUEUE_ACK_WAIT_SECONDS * 1000,
          maxRetries: o.config.QUEUE_MAX_RETRIES,
          retryDelayMs: o.config.QUEUE_RETRY_DELAY_SECONDS * 1000,
          timeoutMs: size.timeoutMs,
          heartbeatMs: o.config.QUEUE_HEARTBEAT_SECONDS * 1000,
          runningRecordMs: o.config.JOB_RUNNING_RECORD_MS,
          ...(o.onAbandoned?.[pool] === undefined ? {} : { onAbandoned: o.onAbandoned[pool] }),
          ...(userShare === undefined ? {} : { userShare }),
          ...(topLevelGate === undefined ? {} : { topLevelGate }),
        }),
      )
    }
  }
  return {
    workers,
    async stop() {
      await Promise.all(workers.map((w) => w.stop()))
    },
  }
}
