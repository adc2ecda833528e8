import { hostname } from 'node:os'
import { jetstream } from '@nats-io/jetstream'
import type { Logger } from '../kernel/log.ts'
import { HEARTBEAT_INTERVAL_MS, startHeartbeat, workersBucket, type Heartbeat } from '../platform/heartbeat.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { listenForCancels } from './cancel-notice.ts'
import { JobFailure, type JobState, type JobStateStore, type Pool } from './job-state.ts'
import { JobSlots } from './job-slots.ts'
import { startLocal, type LocalStart } from './local-run.ts'
import { poolConsumerName } from './provision.ts'
import { startPuller } from './puller.ts'
import type { ResultStore } from './result-store.ts'
import type { TopLevelGate } from './nested-reserve.ts'
import type { UserShare } from './user-share.ts'
import { rememberCancel, RETRYABLE, type WorkerState } from './worker-state.ts'

/*
 * One worker of one pool: `concurrency` slot loops, each pulling one job at a time with `next()`,
 * so `ack_pending` always equals what is executing (consume() would pre-buffer messages whose
 * ack_wait runs down while they wait). Per job: claim by CAS (queued → running),
 * run the executor with a cancel signal, keep the message alive with `working()`, finish by CAS,
 * then ack. A job whose final CAS loses (cancelled or flushed meanwhile) has its result discarded.
 *
 * Failure rules: function jobs get 1 + QUEUE_MAX_RETRIES attempts with
 * doubling backoff, then go to the DLQ stream and end `failed`; agent and sub-agent jobs are never
 * retried — a redelivered agent job (its worker died) ends `failed` instead of hanging.
 *
 * The parts: `job-slots.ts` (slot loops, share check, slot lending), `claim.ts` (the claim and
 * what a delivery that cannot be claimed becomes), `run-job.ts` (one attempt), `record-outcome.ts`
 * (its result, retry or failure), `dead-letter.ts`, `job-liveness.ts`; `worker-state.ts` is what
 * they share.
 */
export interface JobContext {
  job: JobState
  attempt: number
  /** Aborted when the job is cancelled or times out. Executors stop early when they can. */
  signal: AbortSignal
  log: Logger
  /**
   * Waits for `p` while lending this job's slot: one extra pull runs meanwhile, so a parent
   * waiting for a child in the same pool (sub-agent delegation) can never hold every slot and
   * deadlock the pool. The extra slot ends with the wait (after the job it took, if any).
   */
  blocking<T>(p: Promise<T>): Promise<T>
  /** What the executor's `prefetch` answered for this job (started before the claim), when it has one. */
  prefetched?: unknown
  /**
   * Keeps what the attempt printed (a function's stdout and stderr): recorded with its outcome,
   * success or failure, as the state's `output`. The last call counts.
   */
  printed(output: string): void
  /**
   * A speculative executor's run started before its claim was written: resolves once this worker
   * holds the job, rejects (`NotClaimed`) when the claim found it not to run — the signal is
   * aborted then too. Whatever anyone could see (events, writes, tools, hooks) waits on it.
   * Absent when the job was claimed before the run.
   */
  claimed?: Promise<void>
}
/**
 * Runs one attempt. `prefetch`, when present, is called with the job as delivered before the claim
 * (a CAS round trip) and its answer handed to the run as `prefetched`: reads every run of the job
 * needs then overlap the claim instead of following it. What it starts must not fail unhandled
 * (the claim may find the job is not to run, and nobody then waits for it).
 */
export type JobExecutor = ((ctx: JobContext) => Promise<unknown>) & {
  prefetch?: (job: JobState) => unknown
  /**
   * A job started in this process (`startLocal`) runs while its claim is written, its executor
   * waiting on `claimed` before its first visible effect: a chat turn's provider call overlaps
   * the claim's round trip instead of following it.
   */
  speculative?: boolean
  /**
   * The result is durable before the executor returns it (a chat turn's reply is in Postgres):
   * waiters in this process get it then (`announceJobEnd`), before the job's completion is
   * written. Not for jobs whose record is their result: their caller could read it back too early.
   */
  answersBeforeRecord?: boolean
  /**
   * A single-attempt job's result (a synchronous call's, whose caller takes the result from its
   * answer and never from the record) goes to its waiters in this process before the job's
   * completion is written, as with `answersBeforeRecord`: the reply does not wait for the
   * completion CAS and its republish. The record follows (the mirror's Postgres row lags it
   * anyway); a process that dies in between leaves the record as a lost worker's, the job itself
   * is not lost (its message is acked only after the record).
   */
  answersSingleAttemptBeforeRecord?: boolean
}

export interface WorkerOptions {
  nc: NatsConnection
  names: NatsNames
  store: JobStateStore
  results: ResultStore
  pool: Pool
  concurrency: number
  executor: JobExecutor
  nodeId: string
  log: Logger
  ackWaitMs: number
  maxRetries: number
  retryDelayMs: number
  /** Per-attempt time limit (FUNCTION_TIMEOUT / AGENT_JOB_TIMEOUT). */
  timeoutMs: number
  heartbeatMs?: number
  /**
   * Function pools (JOB_RUNNING_RECORD_MS): a first delivery runs at once and its `running` entry
   * is written only if it still runs after this long; a job that ends sooner is recorded once, at
   * its end (a create), so it costs one state write instead of two and starts a round trip
   * earlier. 0 or absent: every job is claimed by its `running` write before it runs.
   */
  runningRecordMs?: number
  /**
   * Called after a job whose worker was lost is marked failed without a retry (agent pools): the
   * pool's owner tells whoever waits (a chat's stream, its actor) instead of leaving them hanging.
   */
  onAbandoned?: (job: JobState) => Promise<void>
  /**
   * The per-user fair share (function pools): a job whose user already runs `cap` jobs in this
   * process goes back to the queue unclaimed (nak with a delay: no attempt counted, no slot held).
   */
  userShare?: UserShare
  /** SHARED_POOL_RESERVE (function pools): top-level jobs over their share of the slots go back to the queue unclaimed. */
  topLevelGate?: TopLevelGate
}

export interface JobWorker {
  nodeId: string
  pool: Pool
  inflight(): number
  /**
   * Runs a job this process accepted itself (local-run.ts) in one of this worker's slots; null
   * when every slot is busy (pulled and local jobs count alike) or the worker is stopping.
   */
  startLocal(job: JobState): Promise<LocalStart> | null
  /** Stops pulling, lets running jobs finish (up to `graceMs`), removes the heartbeat. */
  stop(graceMs?: number): Promise<void>
}

export async function startJobWorker(o: WorkerOptions): Promise<JobWorker> {
  const log = o.log.child({ pool: o.pool, worker: o.nodeId })
  const w: WorkerState = {
    o,
    js: jetstream(o.nc),
    log,
    puller: startPuller({
      nc: o.nc,
      stream: o.names.stream('JOBS'),
      consumer: poolConsumerName(o.pool),
      slots: o.concurrency,
      log,
    }),
    workers: await workersBucket(o.nc, o.names),
    heartbeatMs: o.heartbeatMs ?? HEARTBEAT_INTERVAL_MS,
    maxAttempts: RETRYABLE.has(o.pool) ? 1 + o.maxRetries : 1,
    running: new Set(),
    executing: new Set(),
    aborts: new Map(),
    cancelled: new Map(),
    finishing: new Set(),
    stopping: false,
  }
  const startedAt = new Date().toISOString()
  const heartbeat: Heartbeat = startHeartbeat({
    kv: w.workers,
    role: o.pool,
    nodeId: o.nodeId,
    info: () => ({
      pool: o.pool,
      slots: o.concurrency,
      inflight: w.running.size,
      jobs: [...w.executing],
      host: hostname(),
      pid: process.pid,
      started_at: startedAt,
    }),
    log,
    ...(o.heartbeatMs === undefined ? {} : { intervalMs: o.heartbeatMs }),
  })
  await heartbeat.beat()
  const stopListening = listenForCancels(o.nc, o.names, (id) => {
    const run = w.aborts.get(id)
    if (run !== undefined) run.abort(new JobFailure('job.cancelled', 'cancelled'))
    else rememberCancel(w.cancelled, id)
  })

  const slots = new JobSlots(w)
  const loops = Array.from({ length: o.concurrency }, () => slots.slot())
  log.info({ slots: o.concurrency }, 'job worker started')

  return {
    nodeId: o.nodeId,
    pool: o.pool,
    inflight: () => w.running.size,
    startLocal(job) {
      if (w.stopping || w.running.size >= o.concurrency) return null
      return startLocal(w, job, (p) => slots.blocking(p))
    },
    async stop(graceMs = 10_000) {
      w.stopping = true
      w.puller.close()
      // jobs waiting for their user's place go back to the queue for the workers that stay
      o.userShare?.waiting.release()
      const all = Promise.allSettled([...w.running]).then(() => Promise.allSettled([...w.finishing]))
      await Promise.race([all, new Promise((r) => setTimeout(r, graceMs))])
      await heartbeat.stop()
      stopListening()
      void loops
    },
  }
}
