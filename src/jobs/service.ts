import { jetstreamManager } from '@nats-io/jetstream'
import type { KV } from '@nats-io/kv'
import { Type as T, type Static } from '@sinclair/typebox'
import { Nullable } from '../../schemas/common.ts'
import { JobState as JobStateShape } from '../../schemas/job.ts'
import { bind, type BoundRoute, type RouteHandler } from '../api/bind.ts'
import type { RouteDef } from '../api/route.ts'
import { can, type Principal } from '../auth/principal.ts'
import { AppError, forbidden, notFound } from '../kernel/errors.ts'
import type { Logger } from '../kernel/log.ts'
import { sql, type Db } from '../platform/db.ts'
import { listMembers } from '../platform/heartbeat.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { anyRows, maybeRow, rowType } from '../platform/typed-rows.ts'
import { announceCancel } from './cancel-notice.ts'
import { cancelJob } from './cancel.ts'
import { enqueueJob, findQueuedJob, type EnqueueDeps } from './enqueue.ts'
import { decodeState, jobErrorText, type JobState, type JobStateStore, type Pool } from './job-state.ts'
import { flushStuckJobs } from './maintenance.ts'
import { poolConsumerName } from './provision.ts'
import type { ResultStore } from './result-store.ts'
import { JOB_ROUTES as R } from './routes.ts'

/*
 * The service side of the job endpoints. Live status comes from JOB_STATE (the authority); history
 * and lists from the Postgres mirror. A job the caller may not see answers 404 like a missing one;
 * the queue admin area needs `platform.queue.*:all` and the flush `platform.system.update:all`
 * (admin-only areas).
 */
export const JOB_PERMISSIONS = {
  readAll: 'platform.queue.read:all',
  updateAll: 'platform.queue.update:all',
  systemUpdate: 'platform.system.update:all',
} as const

export interface JobServiceDeps {
  nc: NatsConnection
  names: NatsNames
  db: Db
  store: JobStateStore
  results: ResultStore
  workers: KV
  enqueue: EnqueueDeps
  stuckHours: number
  log: Logger
}

/*
 * Rows as they come back (timestamps as ISO strings, jsonb parsed, int8 as numbers:
 * src/platform/db.ts). An execution row carries the job state's columns under the state's own
 * shapes (schemas/job.ts), the input and result under their column names, and the error as text.
 */
const ExecutionRow = rowType(
  T.Object(
    {
      ...T.Pick(JobStateShape, [
        'id',
        'pool',
        'kind',
        'namespace',
        'name',
        'status',
        'attempts',
        'user_id',
        'trigger_type',
        'trigger_id',
        'chat_id',
        'parent_id',
        'depth',
        'worker',
        'retry_of',
        'callback_url',
        'created_at',
        'started_at',
        'finished_at',
      ]).properties,
      input_data: T.Unknown(),
      output_data: T.Unknown(),
      output: Nullable(T.String()),
      error: Nullable(T.String()),
      callback_status: Nullable(T.String()),
      callback_response_code: Nullable(T.Integer()),
    },
    { title: 'execution' },
  ),
)
type ExecutionRow = Static<typeof ExecutionRow.schema>
const StatusCountRow = rowType(T.Object({ status: T.String(), n: T.Integer() }, { title: 'execution status count' }))
/** A dead letter, with its execution's names when the mirror recorded it (left join). */
const DeadLetterRow = rowType(
  T.Object(
    {
      job_id: T.String(),
      pool: T.String(),
      error: Nullable(T.String()),
      attempts: T.Integer(),
      created_at: T.String(),
      kind: Nullable(T.String()),
      namespace: Nullable(T.String()),
      name: Nullable(T.String()),
    },
    { title: 'dead letter' },
  ),
)
const DeadLetterSeqRow = rowType(T.Object({ seq: T.Integer() }, { title: 'dead letter seq' }))

const POOL_LABEL: Record<Pool, 'functions' | 'agents' | 'subagents'> = {
  fn: 'functions',
  agent: 'agents',
  subagent: 'subagents',
}

function jobRecord(s: JobState) {
  return {
    job_id: s.id,
    execution_id: s.id,
    status: s.status,
    pool: s.pool,
    kind: s.kind,
    namespace: s.namespace,
    name: s.name,
    attempts: s.attempts,
    error: jobErrorText(s.error),
    created_at: s.created_at,
    started_at: s.started_at,
    finished_at: s.finished_at,
    ...(s.due_at === undefined ? {} : { due_at: s.due_at }),
  }
}

function executionRecord(r: Omit<ExecutionRow, 'depth' | 'worker' | 'callback_url'>) {
  const started = r.started_at
  const finished = r.finished_at
  return {
    execution_id: r.id,
    function: { namespace: r.namespace, name: r.name },
    kind: r.kind,
    pool: r.pool,
    trigger_type: r.trigger_type,
    trigger_id: r.trigger_id,
    chat_id: r.chat_id,
    parent_id: r.parent_id,
    user_id: r.user_id,
    status: r.status,
    attempts: r.attempts,
    input_data: r.input_data ?? null,
    output_data: r.output_data ?? null,
    output: r.output,
    error: r.error,
    retry_of: r.retry_of,
    created_at: r.created_at,
    started_at: started,
    finished_at: finished,
    duration_ms: started !== null && finished !== null ? Date.parse(finished) - Date.parse(started) : null,
    callback_status: r.callback_status,
    callback_response_code: r.callback_response_code,
  }
}

export function jobHandlers(d: JobServiceDeps): BoundRoute[] {
  const requireAll = (p: Principal, permission: string) => {
    if (!can(p, permission)) throw forbidden(`requires ${permission}`)
  }
  const visible = (p: Principal, userId: string | null) =>
    (userId !== null && userId === p.userId) || can(p, JOB_PERMISSIONS.readAll)
  /** A completed job's result: inline in its state or, over 64 KB, in the result store (null: expired there). */
  const resultOf = async (s: JobState): Promise<{ value: unknown } | null> => {
    if (s.result_stored !== true) return { value: s.result ?? null }
    const text = await d.results.get(s.id)
    return text === null ? null : { value: JSON.parse(text) as unknown }
  }
  const jobOf = async (p: Principal, id: string): Promise<JobState> => {
    const cur = await d.store.get(id)
    if (cur !== null && visible(p, cur.state.user_id)) return cur.state
    const queued = cur === null ? await findQueuedJob(await jetstreamManager(d.nc), d.names, id) : null
    if (queued !== null && visible(p, queued.user_id)) return queued
    if (cur === null && queued === null) {
      // Older than the state's retention: answer from the execution history.
      const row = await maybeRow(d.db, ExecutionRow, sql.unsafe`select * from executions where id = ${id}::uuid`)
      if (row !== null && visible(p, row.user_id)) {
        return {
          id,
          pool: row.pool,
          kind: row.kind,
          namespace: row.namespace,
          name: row.name,
          status: row.status,
          attempts: row.attempts,
          user_id: row.user_id,
          trigger_type: row.trigger_type,
          trigger_id: row.trigger_id,
          chat_id: row.chat_id,
          parent_id: row.parent_id,
          depth: row.depth,
          input: row.input_data ?? null,
          worker: row.worker,
          result: row.output_data ?? null,
          error: row.error,
          retry_of: row.retry_of,
          callback_url: row.callback_url,
          created_at: row.created_at,
          started_at: row.started_at,
          finished_at: row.finished_at,
        }
      }
    }
    throw notFound(`job ${id} not found`, 'job.not_found')
  }

  const bound: BoundRoute[] = []
  const on = <T extends RouteDef>(route: T, handler: RouteHandler<T>) => bound.push(bind(route, handler))

  on(R.jobsGet, async ({ principal: p, params }) => ({ body: jobRecord(await jobOf(p, params.job_id)) }))

  on(R.jobsResult, async ({ principal: p, params }) => {
    const job = await jobOf(p, params.job_id)
    if (job.status !== 'completed') {
      throw new AppError(
        409,
        'job.not_completed',
        job.status === 'failed' ? `job failed: ${jobErrorText(job.error) ?? 'unknown error'}` : `job is ${job.status}`,
      )
    }
    const result = await resultOf(job)
    if (result === null) throw notFound('the result has expired', 'job.result_expired')
    return { body: result.value }
  })

  on(R.executionsGet, async ({ principal: p, params: { execution_id: id } }) => {
    const row = await maybeRow(d.db, ExecutionRow, sql.unsafe`select * from executions where id = ${id}::uuid`)
    if (row !== null && visible(p, row.user_id)) return { body: executionRecord(row) }
    // Accepted moments ago and not mirrored yet (or not started): build the record from the live
    // state or the queued message.
    const live =
      row === null
        ? ((await d.store.get(id))?.state ?? (await findQueuedJob(await jetstreamManager(d.nc), d.names, id)))
        : null
    if (live !== null && visible(p, live.user_id)) {
      const s = live
      return {
        body: executionRecord({
          ...s,
          input_data: s.input,
          // a result over 64 KB is in the result store, not the state (the mirror copies it into the row)
          output_data: s.status === 'completed' ? ((await resultOf(s))?.value ?? null) : null,
          output: s.output ?? null,
          error: jobErrorText(s.error),
          callback_status: null,
          callback_response_code: null,
        }),
      }
    }
    throw notFound(`execution ${id} not found`, 'execution.not_found')
  })

  on(R.queueCancel, async ({ principal: p, params: { job_id: id } }) => {
    requireAll(p, JOB_PERMISSIONS.updateAll)
    await cancelJob(d, id)
    return { body: { status: 'cancelled', job_id: id } }
  })

  on(R.systemFlushStuckJobs, async ({ principal: p }) => {
    requireAll(p, JOB_PERMISSIONS.systemUpdate)
    return { body: await flushStuckJobs(d.db, d.store, d.stuckHours, d.log, (id) => announceCancel(d.nc, d.names, id)) }
  })

  on(R.queueStats, async ({ principal: p }) => {
    requireAll(p, JOB_PERMISSIONS.readAll)
    const jsm = await jetstreamManager(d.nc)
    const queues = {
      functions: { pending: 0, executing: 0 },
      agents: { pending: 0, executing: 0 },
      subagents: { pending: 0, executing: 0 },
    }
    for (const pool of ['fn', 'agent', 'subagent'] as const) {
      const info = await jsm.consumers.info(d.names.stream('JOBS'), poolConsumerName(pool)).catch(() => null)
      if (info !== null) queues[POOL_LABEL[pool]] = { pending: info.num_pending, executing: info.num_ack_pending }
    }
    const jobs = { scheduled: 0, queued: 0, running: 0, completed: 0, failed: 0, cancelled: 0 }
    const counted = (status: string): status is keyof typeof jobs => status in jobs
    const rows = await anyRows(
      d.db,
      StatusCountRow,
      sql.unsafe`select status, count(*)::int as n from executions where created_at > now() - interval '24 hours' group by status`,
    )
    for (const r of rows) if (counted(r.status)) jobs[r.status] = r.n
    // Jobs nobody has claimed yet have no execution row: count them from the pool backlogs.
    jobs.queued += queues.functions.pending + queues.agents.pending + queues.subagents.pending
    const dlq = await jsm.streams.info(d.names.stream('DLQ'))
    const members = await listMembers(d.workers)
    const count = (role: Pool) => members.filter((m) => m.role === role).length
    return {
      body: {
        queues,
        jobs,
        dlq: { size: dlq.state.messages },
        workers: { functions: count('fn'), agents: count('agent'), subagents: count('subagent') },
      },
    }
  })

  on(R.executionsList, async ({ principal: p, query }) => {
    // Everyone sees their own; who may read every job (an admin) sees every caller's. The filter
    // is in the statement, never after it, so a page is always full when there is more.
    const everyone = can(p, JOB_PERMISSIONS.readAll)
    const where = sql.unsafe`where (${everyone}::boolean or user_id = ${p.userId}::uuid)
        and (${query.kind ?? null}::text is null or kind = ${query.kind ?? null}::text)
        and (${query.namespace ?? null}::text is null or namespace = ${query.namespace ?? null}::text)
        and (${query.name ?? null}::text is null or name = ${query.name ?? null}::text)
        and (${query.status ?? null}::text is null or status = ${query.status ?? null}::text)`
    const [rows, total] = await Promise.all([
      anyRows(
        d.db,
        ExecutionRow,
        sql.unsafe`select * from executions ${where} order by created_at desc limit ${query.limit ?? 50} offset ${query.offset ?? 0}`,
      ),
      d.db.oneFirst(sql.unsafe`select count(*)::int from executions ${where}`),
    ])
    return { body: rows.map(executionRecord), headers: { 'x-total-count': String(total) } }
  })

  on(R.queueJobs, async ({ principal: p, query }) => {
    requireAll(p, JOB_PERMISSIONS.readAll)
    const status = query.status ?? null
    const limit = query.limit ?? 100
    const offset = query.offset ?? 0
    const rows = await anyRows(
      d.db,
      ExecutionRow,
      sql.unsafe`select * from executions where (${status}::text is null or status = ${status}::text)
      order by created_at desc limit ${limit} offset ${offset}`,
    )
    return { body: rows.map(executionRecord) }
  })

  on(R.queueDlqList, async ({ principal: p }) => {
    requireAll(p, JOB_PERMISSIONS.readAll)
    const rows = await anyRows(
      d.db,
      DeadLetterRow,
      sql.unsafe`select d.job_id, d.pool, d.error, d.attempts, d.created_at, e.kind, e.namespace, e.name
      from dlq_entries d left join executions e on e.id = d.job_id where d.retried_as is null order by d.created_at`,
    )
    return {
      body: rows.map((r) => ({
        job_id: r.job_id,
        pool: r.pool,
        kind: r.kind ?? '',
        namespace: r.namespace ?? '',
        name: r.name ?? '',
        error: r.error,
        attempts: r.attempts,
        created_at: r.created_at,
      })),
    }
  })

  on(R.queueDlqRetry, async ({ principal: p, params: { job_id: id } }) => {
    requireAll(p, JOB_PERMISSIONS.updateAll)
    const entry = await maybeRow(
      d.db,
      DeadLetterSeqRow,
      sql.unsafe`select seq from dlq_entries where job_id = ${id}::uuid and retried_as is null`,
    )
    if (entry === null) throw notFound(`job ${id} is not in the dead letter queue`, 'dlq.not_found')
    const jsm = await jetstreamManager(d.nc)
    const msg = await jsm.streams.getMessage(d.names.stream('DLQ'), { seq: entry.seq }).catch(() => null)
    if (msg === null) throw notFound(`job ${id} is no longer in the dead letter queue`, 'dlq.not_found')
    const old = decodeState(msg.data)
    const job = await enqueueJob(d.enqueue, {
      pool: old.pool,
      kind: old.kind,
      namespace: old.namespace,
      name: old.name,
      input: old.input,
      userId: old.user_id,
      triggerType: old.trigger_type,
      triggerId: old.trigger_id,
      chatId: old.chat_id,
      parent: old.parent_id === null ? null : { id: old.parent_id, depth: Math.max(0, old.depth - 1) },
      callbackUrl: old.callback_url,
      retryOf: old.id,
    })
    await d.db.query(sql.unsafe`update dlq_entries set retried_as = ${job.id}::uuid where job_id = ${id}::uuid`)
    await jsm.streams.deleteMessage(d.names.stream('DLQ'), entry.seq).catch(() => undefined)
    return { status: 202, body: { status: 'queued', job_id: job.id, retry_of: id } }
  })

  on(R.queueDlqFlush, async ({ principal: p }) => {
    requireAll(p, JOB_PERMISSIONS.updateAll)
    const jsm = await jetstreamManager(d.nc)
    await jsm.streams.purge(d.names.stream('DLQ'))
    const flushed = await d.db.query(sql.unsafe`delete from dlq_entries where retried_as is null`)
    return { body: { flushed: flushed.rowCount } }
  })

  on(R.queueWorkers, async ({ principal: p }) => {
    requireAll(p, JOB_PERMISSIONS.readAll)
    const members = await listMembers(d.workers)
    return { body: members.map((m) => ({ role: m.role, node_id: m.nodeId, info: m.info, last_seen: m.last_seen })) }
  })

  return bound
}
