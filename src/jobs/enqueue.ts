import { randomUUID } from 'node:crypto'
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream'
import { headers } from '@nats-io/transport-node'
import { invalid } from '../kernel/errors.ts'
import { sql, type Db } from '../platform/db.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { traceparentField } from '../platform/tracing.ts'
import { decodeState, encodeState, POOLS, type JobState, type JobStateStore, type Pool } from './job-state.ts'
import { publishDurably } from './publish.ts'

/*
 * Accepting a job: write its state (`queued`, or `scheduled` with a Postgres timer for
 * `delay_seconds`), then publish it on `jobs.<pool>.<id>` with the job id as `Nats-Msg-Id`. Both
 * steps are idempotent, so a caller may retry an enqueue with the same id. The message carries the
 * state and its KV revision (`Job-Rev`), which lets the worker claim the job with one CAS and no
 * read on the hot path. The execution row in Postgres is written by the mirror, not here.
 */
export interface EnqueueRequest {
  pool: Pool
  kind: string
  namespace: string
  name: string
  input: unknown
  userId: string | null
  id?: string
  triggerType?: string
  triggerId?: string
  chatId?: string | null
  /** The execution that asked for this one (nested calls); its depth bounds the chain. */
  parent?: { id: string; depth: number } | null
  delaySeconds?: number | null
  callbackUrl?: string | null
  retryOf?: string | null
  maxAttempts?: number
  timeoutMs?: number
  meta?: Record<string, unknown>
  /** The span the job's run continues (tracing on); absent: the span current where it is prepared. */
  traceparent?: string
  /**
   * `id` was drawn by the caller just now (randomUUID), not taken from elsewhere: the job is as
   * fresh as one whose id the enqueue draws (header `Job-Fresh`, see publishJob). Lets a caller
   * subscribe to the job's end before it submits it (wait.ts `watchJob`).
   */
  fresh?: boolean
}

export interface EnqueueDeps {
  js: JetStreamClient
  names: NatsNames
  store: JobStateStore
  /** Needed only for delayed jobs (the timer table). */
  db?: Db
  /** MAX_EXECUTION_DEPTH: 0 disables the check. */
  maxDepth: number
  /**
   * The longest delay_seconds (maxDelayOf, start.ts): a scheduled job's state is written once at
   * its enqueue and must still be there when its timer fires. Absent: no limit.
   */
  maxDelaySeconds?: number
}

export const jobSubject = (names: NatsNames, pool: Pool, id: string): string => names.subject(`jobs.${pool}.${id}`)

/** The `queued` (or `scheduled`) state of a job to accept; refuses a chain deeper than MAX_EXECUTION_DEPTH. */
export function prepareJob(
  deps: Pick<EnqueueDeps, 'maxDepth' | 'db' | 'maxDelaySeconds'>,
  req: EnqueueRequest,
): JobState {
  const depth = req.parent === null || req.parent === undefined ? 0 : req.parent.depth + 1
  if (deps.maxDepth > 0 && depth > deps.maxDepth) {
    throw invalid(
      `execution chain deeper than MAX_EXECUTION_DEPTH (${String(deps.maxDepth)})`,
      undefined,
      'job.depth_exceeded',
    )
  }
  const delay = req.delaySeconds ?? 0
  if (deps.maxDelaySeconds !== undefined && delay > deps.maxDelaySeconds) {
    throw invalid(
      `delay_seconds may be at most ${String(deps.maxDelaySeconds)}: a delayed job's state is kept JOB_RESULT_TTL_HOURS from its enqueue`,
      [{ path: 'delay_seconds', message: `at most ${String(deps.maxDelaySeconds)}` }],
      'job.delay_too_long',
    )
  }
  if (delay > 0 && deps.db === undefined) throw new Error('delayed jobs need the database (timer table)')
  const now = new Date()
  const dueAt = delay > 0 ? new Date(now.getTime() + delay * 1000).toISOString() : undefined
  const state: JobState = {
    id: req.id ?? randomUUID(),
    pool: req.pool,
    kind: req.kind,
    namespace: req.namespace,
    name: req.name,
    status: delay > 0 ? 'scheduled' : 'queued',
    attempts: 0,
    user_id: req.userId,
    trigger_type: req.triggerType ?? 'api',
    trigger_id: req.triggerId ?? 'runtime-api',
    chat_id: req.chatId ?? null,
    parent_id: req.parent?.id ?? null,
    depth,
    input: req.input ?? null,
    worker: null,
    error: null,
    retry_of: req.retryOf ?? null,
    callback_url: req.callbackUrl ?? null,
    created_at: now.toISOString(),
    started_at: null,
    finished_at: null,
    ...(dueAt === undefined ? {} : { due_at: dueAt }),
    ...(req.maxAttempts === undefined ? {} : { max_attempts: req.maxAttempts }),
    ...(req.timeoutMs === undefined ? {} : { timeout_ms: req.timeoutMs }),
    ...(req.meta === undefined ? {} : { meta: req.meta }),
    ...(req.traceparent === undefined ? traceparentField() : { traceparent: req.traceparent }),
  }
  return state
}

export async function enqueueJob(deps: EnqueueDeps, req: EnqueueRequest): Promise<JobState> {
  const state = prepareJob(deps, req)
  const dueAt = state.due_at
  // deps.db is there whenever dueAt is (checked above); the test narrows both without a cast.
  if (dueAt !== undefined && deps.db !== undefined) {
    await deps.db.query(
      sql.unsafe`insert into job_timers (job_id, due_at) values (${state.id}::uuid, ${dueAt}::timestamptz) on conflict do nothing`,
    )
    const rev = await deps.store.create(state)
    if (rev === null) return (await deps.store.get(state.id))?.state ?? state
    return state
  }
  // The state entry is written by the worker that claims the job (one write fewer per job and one
  // round trip less between enqueue and start); until then the queued job is its message in JOBS,
  // which the status endpoints read (`findQueuedJob`). Enqueuing the same id again publishes again:
  // the stream drops it within the duplicate window, and after it the claim finds the state.
  await publishJob(deps, state, 0, req.id === undefined || req.fresh === true)
  return state
}

/**
 * Publishes a queued job (also used by the timer dispatcher and DLQ retry). `revision` is the state
 * entry's revision when one exists (delayed jobs), 0 when the worker is to create it. `fresh`: the
 * id was drawn by this enqueue, so no entry can exist for it but a cancel's (header `Job-Fresh`:
 * a function worker may then run it before writing its claim, see job-slots.ts); a caller's id (a
 * schedule tick's) may name a job that ran already, which only the claim's create finds out.
 */
export async function publishJob(
  deps: Pick<EnqueueDeps, 'js' | 'names'>,
  state: JobState,
  revision: number,
  fresh = false,
): Promise<void> {
  const h = headers()
  h.set('Job-Rev', String(revision))
  if (fresh) h.set('Job-Fresh', '1')
  await publishDurably(deps.js, jobSubject(deps.names, state.pool, state.id), encodeState(state), {
    msgID: state.id,
    headers: h,
  })
}

/**
 * A job that no worker has claimed yet has no state entry: it is its message in JOBS. Looks it up
 * by subject in each pool (admin and status paths only; never on the hot path).
 */
export async function findQueuedJob(jsm: JetStreamManager, names: NatsNames, id: string): Promise<JobState | null> {
  for (const pool of POOLS) {
    const msg = await jsm.streams
      .getMessage(names.stream('JOBS'), { last_by_subj: jobSubject(names, pool, id) })
      .catch(() => null)
    if (msg !== null && msg.data.length > 0) return decodeState(msg.data)
  }
  return null
}
