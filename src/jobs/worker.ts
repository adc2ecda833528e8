import { hostname } from 'node:os'
import { jetstream } from '@nats-io/jetstream'
import { headers } from '@nats-io/transport-node'
import type { Logger } from '../kernel/log.ts'
import { HEARTBEAT_INTERVAL_MS, startHeartbeat, workersBucket, type Heartbeat, type Member } from '../platform/heartbeat.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { INLINE_RESULT_MAX_BYTES, JobFailure, decodeState, isTerminal, jobError, jobErrorOf, jobErrorText, toJobError, type JobError, type JobState, type JobStateStore, type Pool, type StateEntry } from './job-state.ts'
import { poolConsumerName } from './provision.ts'
import { startPuller, type PulledMessage } from './puller.ts'
import { publishDurably } from './publish.ts'
import type { ResultStore } from './result-store.ts'
import { USER_SHARE_RETRY_MS, type UserShare } from './user-share.ts'

/*
 * One worker of one pool: `concurrency` slot loops, each pulling one job at a time with `next()`,
 * so `ack_pending` always equals what is executing (consume() would pre-buffer messages whose
 * ack_wait runs down while they wait; research §0.6). Per job: claim by CAS (queued → running),
 * run the executor with a cancel signal, keep the message alive with `working()`, finish by CAS,
 * then ack. A job whose final CAS loses (cancelled or flushed meanwhile) has its result discarded.
 *
 * Failure rules (SPEC §3, DESIGN §7): function jobs get 1 + QUEUE_MAX_RETRIES attempts with
 * doubling backoff, then go to the DLQ stream and end `failed`; agent and sub-agent jobs are never
 * retried — a redelivered agent job (its worker died) ends `failed` instead of hanging.
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
}
export type JobExecutor = (ctx: JobContext) => Promise<unknown>

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
   * Called after a job whose worker was lost is marked failed without a retry (agent pools): the
   * pool's owner tells whoever waits (a chat's stream, its actor) instead of leaving them hanging.
   */
  onAbandoned?: (job: JobState) => Promise<void>
  /**
   * The per-user fair share (function pools): a job whose user already runs `cap` jobs in this
   * process goes back to the queue unclaimed (nak with a delay: no attempt counted, no slot held).
   */
  userShare?: UserShare
}

export interface JobWorker {
  nodeId: string
  inflight(): number
  /** Stops pulling, lets running jobs finish (up to `graceMs`), removes the heartbeat. */
  stop(graceMs?: number): Promise<void>
}

const RETRYABLE: ReadonlySet<Pool> = new Set(['fn'])

export async function startJobWorker(o: WorkerOptions): Promise<JobWorker> {
  const js = jetstream(o.nc)
  const log = o.log.child({ pool: o.pool, worker: o.nodeId })
  const puller = startPuller({ nc: o.nc, stream: o.names.stream('JOBS'), consumer: poolConsumerName(o.pool), slots: o.concurrency, log })
  const running = new Set<Promise<void>>()
  /** Ids of the jobs this worker executes now (listed in its heartbeat). */
  const executing = new Set<string>()
  const finishing = new Set<Promise<void>>()
  let stopping = false
  const maxAttempts = RETRYABLE.has(o.pool) ? 1 + o.maxRetries : 1
  const startedAt = new Date().toISOString()

  const workers = await workersBucket(o.nc, o.names)
  const heartbeat: Heartbeat = startHeartbeat({
    kv: workers,
    role: o.pool,
    nodeId: o.nodeId,
    info: () => ({ pool: o.pool, slots: o.concurrency, inflight: running.size, jobs: [...executing], host: hostname(), pid: process.pid, started_at: startedAt }),
    log,
    ...(o.heartbeatMs === undefined ? {} : { intervalMs: o.heartbeatMs }),
  })
  await heartbeat.beat()

  const heartbeatMs = o.heartbeatMs ?? HEARTBEAT_INTERVAL_MS
  /**
   * Whether the worker a running job's state names is still executing it. A claim whose answer
   * was lost (NATS restarting) leaves a `running` state that nobody runs, even on a live worker, so
   * liveness alone is not enough: each beat lists the jobs the worker executes, and a job started
   * after the last beat is given the benefit of the doubt until the next one.
   */
  const stillRunning = async (s: JobState): Promise<boolean> => {
    if (s.worker === null) return false
    if (s.worker === o.nodeId) return executing.has(s.id)
    const e = await workers.get(`${o.pool}.${s.worker}`).catch(() => null)
    if (e === null || e.operation !== 'PUT' || e.length === 0) return false
    const beat = e.json<Member>()
    const seen = Date.parse(beat.last_seen)
    // The bucket keeps a key 30 s after the last beat; three missed beats already mean dead.
    if (Date.now() - seen >= 3 * heartbeatMs) return false
    if (Array.isArray(beat.info['jobs']) && (beat.info['jobs'] as unknown[]).includes(s.id)) return true
    return Date.parse(s.started_at ?? '') >= seen - 1_000
  }

  const toDlq = async (m: PulledMessage, cur: StateEntry, reason: JobError): Promise<void> => {
    const h = headers()
    h.set('X-Error', (jobErrorText(reason) ?? '').slice(0, 1000).replace(/[\r\n]+/g, ' '))
    h.set('X-Error-Code', reason.code)
    h.set('X-Attempts', String(cur.state.attempts))
    h.set('X-Orig-Subject', m.subject)
    const ack = await publishDurably(js, o.names.subject(`dlq.${o.pool}.${cur.state.id}`), m.data, { msgID: `dlq-${cur.state.id}-${String(cur.state.attempts)}`, headers: h })
    await o.store.transition(
      cur.state.id,
      (s) => (isTerminal(s.status) ? null : { ...s, status: 'failed', error: reason, dlq_seq: ack.seq, worker: o.nodeId, finished_at: new Date().toISOString() }),
      cur,
    )
    m.term()
    log.warn({ job: cur.state.id, attempts: cur.state.attempts, reason }, 'job moved to the dead letter queue')
  }

  const handle = async (m: PulledMessage): Promise<void> => {
    const id = m.subject.slice(m.subject.lastIndexOf('.') + 1)
    const carried = decodeState(m.data)
    if (carried.id !== id) {
      m.term()
      return
    }
    const share = o.userShare
    // A synchronous nested call (a function calling another and waiting for it) is not counted:
    // its caller holds a place already and waits on it, so counting both could deadlock a user's
    // chains at the cap. Nested async jobs are counted (a function could start any number of them).
    const nestedSync = (carried.depth ?? 0) > 0 && carried.max_attempts === 1
    if (share === undefined || nestedSync) return judge(m, id, carried)
    // Over the user's share: back to the queue before the claim, so no attempt is counted and the
    // slot takes the next message (another user's) at once.
    if (!share.tryEnter(carried.user_id)) {
      m.nak(USER_SHARE_RETRY_MS)
      return
    }
    try {
      await judge(m, id, carried)
    } finally {
      share.leave(carried.user_id)
    }
  }

  const judge = async (m: PulledMessage, id: string, carried: JobState): Promise<void> => {
    const rev = Number(m.headers?.get('Job-Rev') ?? '0')
    let claimed: StateEntry | null = null
    let cur: StateEntry | null
    if (rev === 0) {
      // First delivery of a fresh job: the claim creates the state entry. It exists already when
      // the job was cancelled while queued, or on a retry or redelivery: then judge what is there.
      const first: JobState = { ...carried, status: 'running', attempts: 1, worker: o.nodeId, started_at: new Date().toISOString(), error: null }
      const created = carried.status === 'queued' ? await o.store.create(first) : null
      if (created !== null) {
        await run(m, { state: first, revision: created })
        return
      }
      cur = await o.store.get(id)
    } else {
      // Delayed jobs carry the revision of their `queued` entry: the claiming CAS below succeeds
      // without a read when nothing changed since.
      cur = { state: carried, revision: rev }
    }
    if (cur === null) {
      m.term()
      return
    }
    let outcome: 'claim' | 'skip' | 'busy' | 'lost-agent' | 'exhausted' = 'skip'
    for (let i = 0; i < 50 && cur !== null && claimed === null; i++) {
      const s: JobState = cur.state
      if (isTerminal(s.status) || s.status === 'scheduled') outcome = 'skip'
      // Redelivered while its worker is alive (a NATS restart resets ack timers, a long GC pause):
      // taking it over would run it twice. Only a dead worker's job is taken over.
      else if (s.status === 'running' && (await stillRunning(s))) outcome = 'busy'
      else if (s.status === 'running' && !RETRYABLE.has(o.pool)) outcome = 'lost-agent'
      else if (s.attempts >= (s.max_attempts ?? maxAttempts)) outcome = 'exhausted'
      else outcome = 'claim'
      if (outcome !== 'claim') break
      const next: JobState = { ...s, status: 'running', attempts: s.attempts + 1, worker: o.nodeId, started_at: new Date().toISOString(), error: null }
      claimed = await o.store.transition(id, (now) => (now.status === s.status && now.attempts === s.attempts ? next : null), cur)
      if (claimed === null) cur = await o.store.get(id)
    }
    if (cur === null || outcome === 'skip' || (outcome === 'claim' && claimed === null)) {
      m.term()
      return
    }
    if (outcome === 'busy') {
      // Look again after an ack_wait; the running worker's ack removes the message meanwhile.
      m.nak(o.ackWaitMs)
      return
    }
    if (outcome === 'lost-agent') {
      const lost = jobError('job.worker_lost', 'worker lost during the run; agent jobs are not retried')
      const failed = await o.store.transition(id, (s) => (isTerminal(s.status) ? null : { ...s, status: 'failed', error: lost, finished_at: new Date().toISOString() }), cur)
      m.term()
      if (failed !== null) await o.onAbandoned?.(failed.state).catch((err: unknown) => log.warn({ err, job: id }, 'reporting an abandoned job failed'))
      log.warn({ job: id }, 'agent job redelivered after its worker was lost: marked failed')
      return
    }
    if (outcome === 'exhausted') {
      await toDlq(m, cur, jobErrorOf(cur.state.error) ?? jobError('job.worker_lost', 'worker lost during the last attempt'))
      return
    }
    await run(m, claimed as StateEntry)
  }

  const run = async (m: PulledMessage, claimed: StateEntry): Promise<void> => {
    const job = claimed.state
    const attempt = job.attempts
    executing.add(job.id)
    const ac = new AbortController()
    // The done channel: a cancel or flush rewrites the state, and the bucket republishes it here.
    // The abort stops agent turns early and kills a function's sandbox (the pool destroys it
    // instead of waiting for the run to end: a cancelled run must not keep its sandbox; this
    // deviates from SPEC §3's "running containers are not killed", see sandbox/README.md).
    const sub = o.nc.subscribe(o.names.subject(`evt.job.${job.id}`), {
      callback: (_err, msg) => {
        try {
          const s = JSON.parse(new TextDecoder().decode(msg.data)) as JobState
          if (s.status === 'cancelled') ac.abort(new JobFailure('job.cancelled', 'cancelled'))
        } catch {
          // a delete marker or foreign payload: not a cancel
        }
      },
    })
    const keepAlive = setInterval(() => m.working(), Math.max(500, Math.floor(o.ackWaitMs / 3)))
    const timeoutMs = job.timeout_ms ?? o.timeoutMs
    const timeout = setTimeout(() => ac.abort(new JobFailure('job.timeout', `timed out after ${String(Math.round(timeoutMs / 1000))} s`)), timeoutMs)
    const mine = (s: JobState) => s.status === 'running' && s.worker === o.nodeId && s.attempts === attempt
    // Only the executor's own error is a job failure. An error after it succeeded (NATS
    // unreachable while recording the result) must not turn into a retry that runs the job again:
    // the store retries through outages, and a write that still fails leaves the message unacked
    // so the next delivery finds the state and judges it.
    let outcome: { ok: true; result: unknown } | { ok: false; reason: JobError }
    try {
      const result = await Promise.race([
        o.executor({ job, attempt, signal: ac.signal, log: log.child({ job: job.id, attempt }), blocking }),
        new Promise<never>((_, reject) => ac.signal.addEventListener('abort', () => reject(ac.signal.reason as Error), { once: true })),
      ])
      outcome = { ok: true, result }
    } catch (err) {
      outcome = { ok: false, reason: toJobError(err) }
    }
    // Recording the outcome runs after the slot is free again: the next job is pulled while the
    // state write and the ack are in flight (at most `concurrency` of them, so ack_pending stays
    // within twice the slots). The message stays alive (`working()`) until it is acked.
    const done: Promise<void> = (async () => {
      try {
        if (outcome.ok) {
          const result = outcome.result
          const encoded = JSON.stringify(result ?? null)
          const large = Buffer.byteLength(encoded) > INLINE_RESULT_MAX_BYTES
          if (large) await o.results.put(job.id, encoded)
          // CAS against the claim's revision: no read on the hot path; a cancel in between makes it
          // fail, re-read, and refuse.
          const written = await o.store.transition(
            job.id,
            (s) => (mine(s) ? { ...s, status: 'completed', finished_at: new Date().toISOString(), ...(large ? { result_stored: true } : { result: result ?? null }) } : null),
            claimed,
          )
          if (written === null) log.info({ job: job.id }, 'job finished after it was cancelled, flushed or already recorded: nothing to write')
          m.ack()
          return
        }
        const reason = outcome.reason
        const cur = await o.store.get(job.id)
        if (cur === null || !mine(cur.state)) {
          // cancelled or flushed meanwhile: the state already says how it ended
          m.term()
          return
        }
        // Never-retried jobs (agents; synchronous calls, whose caller gets the error) end `failed`
        // without a DLQ entry: there is nothing to retry later.
        if (!RETRYABLE.has(o.pool) || job.max_attempts === 1) {
          await o.store.transition(job.id, (s) => (mine(s) ? { ...s, status: 'failed', error: reason, finished_at: new Date().toISOString() } : null), cur)
          m.term()
        } else if (attempt < (job.max_attempts ?? maxAttempts)) {
          const back = await o.store.transition(job.id, (s) => (mine(s) ? { ...s, status: 'queued', error: reason, worker: null } : null), cur)
          if (back === null) m.term()
          else m.nak(o.retryDelayMs * 2 ** (attempt - 1))
          log.info({ job: job.id, attempt, err: reason.message, code: reason.code }, 'function job failed: retry scheduled')
        } else {
          await toDlq(m, { ...cur, state: { ...cur.state, error: reason } }, reason)
        }
      } finally {
        executing.delete(job.id)
        clearInterval(keepAlive)
        clearTimeout(timeout)
        sub.unsubscribe()
      }
    })().catch((err: unknown) => {
      // Left unacked: the message comes back after ack_wait and its state is judged again.
      log.error({ err, job: job.id }, 'recording a job outcome failed')
    })
    finishing.add(done)
    void done.finally(() => finishing.delete(done))
    if (finishing.size >= o.concurrency) await Promise.race(finishing)
  }

  const blocking = async <T>(p: Promise<T>): Promise<T> => {
    const loan = { active: true }
    const extra = (async () => {
      for (;;) {
        if (!loan.active || stopping) return
        const m: PulledMessage | null = await puller.take()
        if (m === null) return
        const h = handle(m).catch((err: unknown) => log.error({ err, subject: m.subject }, 'job handling failed'))
        running.add(h)
        await h
        running.delete(h)
      }
    })()
    try {
      return await p
    } finally {
      loan.active = false
      void extra
    }
  }

  const slot = async (): Promise<void> => {
    for (;;) {
      // take() answers null once stop() closed the puller.
      const m: PulledMessage | null = await puller.take()
      if (m === null) return
      if (stopping) {
        m.nak()
        return
      }
      const p = handle(m).catch((err: unknown) => {
        // The message is left unacked: it comes back after ack_wait and is judged again.
        log.error({ err, subject: m.subject }, 'job handling failed')
      })
      running.add(p)
      await p
      running.delete(p)
    }
  }
  const loops = Array.from({ length: o.concurrency }, () => slot())
  log.info({ slots: o.concurrency }, 'job worker started')

  return {
    nodeId: o.nodeId,
    inflight: () => running.size,
    async stop(graceMs = 10_000) {
      stopping = true
      puller.close()
      const all = Promise.allSettled([...running]).then(() => Promise.allSettled([...finishing]))
      await Promise.race([all, new Promise((r) => setTimeout(r, graceMs))])
      await heartbeat.stop()
      void loops
    },
  }
}
