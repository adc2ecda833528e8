import { jetstreamManager } from '@nats-io/jetstream'
import type { KV } from '@nats-io/kv'
import { bind, type BoundRoute, type RouteHandler } from '../api/bind.ts'
import type { RouteDef } from '../api/route.ts'
import { can, type Principal } from '../auth/principal.ts'
import { AppError, conflict, forbidden, notFound } from '../kernel/errors.ts'
import type { Logger } from '../kernel/log.ts'
import { sql, type Db } from '../platform/db.ts'
import { listMembers } from '../platform/heartbeat.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { enqueueJob, findQueuedJob, jobSubject, type EnqueueDeps } from './enqueue.ts'
import { decodeState, isTerminal, jobErrorText, type JobState, type JobStateStore, type Pool } from './job-state.ts'
import { flushStuckJobs } from './maintenance.ts'
import { upsertExecution } from './mirror.ts'
import { poolConsumerName } from './provision.ts'
import type { ResultStore } from './result-store.ts'
import { JOB_ROUTES as R } from './routes.ts'

/*
 * The service side of the job endpoints. Live status comes from JOB_STATE (the authority); history
 * and lists from the Postgres mirror. A job the caller may not see answers 404 like a missing one;
 * the queue admin area needs `platform.queue.*:all` and the flush `platform.system.update:all`
 * (SPEC §5 admin-only areas).
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

const POOL_LABEL: Record<Pool, 'functions' | 'agents' | 'subagents'> = { fn: 'functions', agent: 'agents', subagent: 'subagents' }

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

function executionRecord(r: Record<string, unknown>) {
  const started = r['started_at'] as string | null
  const finished = r['finished_at'] as string | null
  return {
    execution_id: String(r['id']),
    function: { namespace: String(r['namespace']), name: String(r['name']) },
    kind: String(r['kind']),
    pool: String(r['pool']),
    trigger_type: String(r['trigger_type']),
    trigger_id: String(r['trigger_id']),
    chat_id: (r['chat_id'] as string | null) ?? null,
    parent_id: (r['parent_id'] as string | null) ?? null,
    user_id: (r['user_id'] as string | null) ?? null,
    status: String(r['status']),
    attempts: Number(r['attempts']),
    input_data: r['input_data'] ?? null,
    output_data: r['output_data'] ?? null,
    error: (r['error'] as string | null) ?? null,
    retry_of: (r['retry_of'] as string | null) ?? null,
    created_at: String(r['created_at']),
    started_at: started,
    finished_at: finished,
    duration_ms: started !== null && finished !== null ? Date.parse(finished) - Date.parse(started) : null,
    callback_status: (r['callback_status'] as string | null) ?? null,
    callback_response_code: (r['callback_response_code'] as number | null) ?? null,
  }
}

export function jobHandlers(d: JobServiceDeps): BoundRoute[] {
  const requireAll = (p: Principal, permission: string) => {
    if (!can(p, permission)) throw forbidden(`requires ${permission}`)
  }
  const visible = (p: Principal, userId: string | null) => (userId !== null && userId === p.userId) || can(p, JOB_PERMISSIONS.readAll)
  const jobOf = async (p: Principal, id: string): Promise<JobState> => {
    const cur = await d.store.get(id)
    if (cur !== null && visible(p, cur.state.user_id)) return cur.state
    const queued = cur === null ? await findQueuedJob(await jetstreamManager(d.nc), d.names, id) : null
    if (queued !== null && visible(p, queued.user_id)) return queued
    if (cur === null && queued === null) {
      // Older than the state's retention: answer from the execution history.
      const row = await d.db.maybeOne(sql.unsafe`select * from executions where id = ${id}::uuid`)
      if (row !== null && visible(p, (row['user_id'] as string | null) ?? null)) {
        return {
          id,
          pool: row['pool'] as Pool,
          kind: String(row['kind']),
          namespace: String(row['namespace']),
          name: String(row['name']),
          status: row['status'] as JobState['status'],
          attempts: Number(row['attempts']),
          user_id: (row['user_id'] as string | null) ?? null,
          trigger_type: String(row['trigger_type']),
          trigger_id: String(row['trigger_id']),
          chat_id: (row['chat_id'] as string | null) ?? null,
          parent_id: (row['parent_id'] as string | null) ?? null,
          depth: Number(row['depth']),
          input: row['input_data'] ?? null,
          worker: (row['worker'] as string | null) ?? null,
          result: row['output_data'] ?? null,
          error: (row['error'] as string | null) ?? null,
          retry_of: (row['retry_of'] as string | null) ?? null,
          callback_url: (row['callback_url'] as string | null) ?? null,
          created_at: String(row['created_at']),
          started_at: (row['started_at'] as string | null) ?? null,
          finished_at: (row['finished_at'] as string | null) ?? null,
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
      throw new AppError(409, 'job.not_completed', job.status === 'failed' ? `job failed: ${jobErrorText(job.error) ?? 'unknown error'}` : `job is ${job.status}`)
    }
    if (job.result_stored === true) {
      const text = await d.results.get(job.id)
      if (text === null) throw notFound('the result has expired', 'job.result_expired')
      return { body: JSON.parse(text) as unknown }
    }
    return { body: job.result ?? null }
  })

  on(R.executionsGet, async ({ principal: p, params: { execution_id: id } }) => {
    const row = await d.db.maybeOne(sql.unsafe`select * from executions where id = ${id}::uuid`)
    if (row !== null && visible(p, (row['user_id'] as string | null) ?? null)) return { body: executionRecord(row) }
    // Accepted moments ago and not mirrored yet (or not started): build the record from the live
    // state or the queued message.
    const live = row === null ? ((await d.store.get(id))?.state ?? (await findQueuedJob(await jetstreamManager(d.nc), d.names, id))) : null
    if (live !== null && visible(p, live.user_id)) {
      const s = live
      return {
        body: executionRecord({ ...s, input_data: s.input, output_data: s.status === 'completed' ? (s.result ?? null) : null, callback_status: null, callback_response_code: null }),
      }
    }
    throw notFound(`execution ${id} not found`, 'execution.not_found')
  })

  on(R.queueCancel, async ({ principal: p, params: { job_id: id } }) => {
    requireAll(p, JOB_PERMISSIONS.updateAll)
    const cancel = (s: JobState): JobState => ({ ...s, status: 'cancelled', error: 'cancelled', finished_at: new Date().toISOString() })
    let done: { state: JobState; revision: number } | null = null
    let wasWaiting = false
    let cur = await d.store.get(id)
    if (cur === null) {
      // Not claimed yet: create the entry as cancelled; if a worker claims it at this very moment,
      // one of the two creates loses and the CAS path below decides.
      const queued = await findQueuedJob(await jetstreamManager(d.nc), d.names, id)
      if (queued === null) throw notFound(`job ${id} not found`, 'job.not_found')
      const rev = await d.store.create(cancel(queued))
      if (rev !== null) done = { state: cancel(queued), revision: rev }
      else cur = await d.store.get(id)
      wasWaiting = true
    }
    if (done === null && cur !== null) {
      wasWaiting = cur.state.status === 'queued' || cur.state.status === 'scheduled'
      done = await d.store.transition(id, (s) => (isTerminal(s.status) ? null : cancel(s)), cur)
    }
    if (done === null) {
      const now = await d.store.get(id)
      throw conflict(`job already ${now?.state.status ?? 'gone'}`, 'job.already_finished')
    }
    if (wasWaiting) {
      // Drop the waiting message so the backlog count is exact; a worker that already pulled it
      // skips it anyway because the state is terminal.
      const jsm = await jetstreamManager(d.nc)
      await jsm.streams.purge(d.names.stream('JOBS'), { filter: jobSubject(d.names, done.state.pool, id) }).catch(() => undefined)
    }
    await upsertExecution(d.db, done.state, done.revision, null)
    return { body: { status: 'cancelled', job_id: id } }
  })

  on(R.systemFlushStuckJobs, async ({ principal: p }) => {
    requireAll(p, JOB_PERMISSIONS.systemUpdate)
    return { body: await flushStuckJobs(d.db, d.store, d.stuckHours, d.log) }
  })

  on(R.queueStats, async ({ principal: p }) => {
    requireAll(p, JOB_PERMISSIONS.readAll)
    const jsm = await jetstreamManager(d.nc)
    const queues = { functions: { pending: 0, executing: 0 }, agents: { pending: 0, executing: 0 }, subagents: { pending: 0, executing: 0 } }
    for (const pool of ['fn', 'agent', 'subagent'] as const) {
      const info = await jsm.consumers.info(d.names.stream('JOBS'), poolConsumerName(pool)).catch(() => null)
      if (info !== null) queues[POOL_LABEL[pool]] = { pending: info.num_pending, executing: info.num_ack_pending }
    }
    const jobs = { scheduled: 0, queued: 0, running: 0, completed: 0, failed: 0, cancelled: 0 }
    const rows = await d.db.any(sql.unsafe`select status, count(*)::int as n from executions where created_at > now() - interval '24 hours' group by status`)
    for (const r of rows) if (String(r['status']) in jobs) jobs[String(r['status']) as keyof typeof jobs] = Number(r['n'])
    // Jobs nobody has claimed yet have no execution row: count them from the pool backlogs.
    jobs.queued += queues.functions.pending + queues.agents.pending + queues.subagents.pending
    const dlq = await jsm.streams.info(d.names.stream('DLQ'))
    const members = await listMembers(d.workers)
    const count = (role: Pool) => members.filter((m) => m.role === role).length
    return { body: { queues, jobs, dlq: { size: dlq.state.messages }, workers: { functions: count('fn'), agents: count('agent'), subagents: count('subagent') } } }
  })

  on(R.queueJobs, async ({ principal: p, query }) => {
    requireAll(p, JOB_PERMISSIONS.readAll)
    const status = query.status ?? null
    const limit = query.limit ?? 100
    const offset = query.offset ?? 0
    const rows = await d.db.any(sql.unsafe`select * from executions where (${status}::text is null or status = ${status}::text)
      order by created_at desc limit ${limit} offset ${offset}`)
    return { body: rows.map(executionRecord) }
  })

  on(R.queueDlqList, async ({ principal: p }) => {
    requireAll(p, JOB_PERMISSIONS.readAll)
    const rows = await d.db.any(sql.unsafe`select d.job_id, d.pool, d.error, d.attempts, d.created_at, e.kind, e.namespace, e.name
      from dlq_entries d left join executions e on e.id = d.job_id where d.retried_as is null order by d.created_at`)
    return {
      body: rows.map((r) => ({
        job_id: String(r['job_id']),
        pool: String(r['pool']),
        kind: String(r['kind'] ?? ''),
        namespace: String(r['namespace'] ?? ''),
        name: String(r['name'] ?? ''),
        error: (r['error'] as string | null) ?? null,
        attempts: Number(r['attempts']),
        created_at: String(r['created_at']),
      })),
    }
  })

  on(R.queueDlqRetry, async ({ principal: p, params: { job_id: id } }) => {
    requireAll(p, JOB_PERMISSIONS.updateAll)
    const entry = await d.db.maybeOne(sql.unsafe`select seq from dlq_entries where job_id = ${id}::uuid and retried_as is null`)
    if (entry === null) throw notFound(`job ${id} is not in the dead letter queue`, 'dlq.not_found')
    const jsm = await jetstreamManager(d.nc)
    const msg = await jsm.streams.getMessage(d.names.stream('DLQ'), { seq: Number(entry['seq']) }).catch(() => null)
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
    await jsm.streams.deleteMessage(d.names.stream('DLQ'), Number(entry['seq'])).catch(() => undefined)
    return { status: 202, body: { status: 'queued', job_id: job.id, retry_of: id } }
  })

  on(R.queueDlqFlush, async ({ principal: p }) => {
    requireAll(p, JOB_PERMISSIONS.updateAll)
    const jsm = await jetstreamManager(d.nc)
    await jsm.streams.purge(d.names.stream('DLQ'))
    const rows = await d.db.any(sql.unsafe`delete from dlq_entries where retried_as is null returning job_id`)
    return { body: { flushed: rows.length } }
  })

  on(R.queueWorkers, async ({ principal: p }) => {
    requireAll(p, JOB_PERMISSIONS.readAll)
    const members = await listMembers(d.workers)
    return { body: members.map((m) => ({ role: m.role, node_id: m.nodeId, info: m.info, last_seen: m.last_seen })) }
  })

  return bound
}
