import { randomUUID } from 'node:crypto'
import { jetstreamManager } from '@nats-io/jetstream'
import t from 'tap'
import { announceCancel } from '../../src/jobs/cancel-notice.ts'
import { enqueueJob, type EnqueueRequest } from '../../src/jobs/enqueue.ts'
import { decodeState, type JobState } from '../../src/jobs/job-state.ts'
import { openResultStore } from '../../src/jobs/result-store.ts'
import { waitForJob } from '../../src/jobs/wait.ts'
import { startJobWorker, type JobExecutor } from '../../src/jobs/worker.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { eventually } from '../helpers/eventually.ts'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * JOB_RUNNING_RECORD_MS (the opt-in deferred claim) against real NATS: a function job fresh from
 * its enqueue runs before anything is written, and its `running` entry is written only if it runs
 * that long. Every state write is counted on the bucket's republish (`evt.job.<id>`, one message
 * per write). What must still hold: one write for a short job, the claim for a long one, a cancel
 * (in the window, or crossing the delivery) stops or prevents the run, retries still count.
 */
const RECORD_MS = 1_500
const env = await startTestPlatform(t, {
  ROLES: 'gateway,resources',
  JOB_RUNNING_RECORD_MS: String(RECORD_MS),
  QUEUE_RETRY_DELAY_SECONDS: '0.05',
})
const { platform, config } = env
const jobs = platform.jobs
if (jobs === undefined) throw new Error('job service missing')
const names = natsNames(config.NATS_PREFIX)
const log = createLogger({ level: 'silent' })
if (config.JOB_RUNNING_RECORD_MS !== RECORD_MS) throw new Error('JOB_RUNNING_RECORD_MS was not read')

// Every write of every job, in order, by job id.
const writes = new Map<string, JobState[]>()
const sub = platform.nc.subscribe(names.subject('evt.job.>'), {
  callback: (_e, m) => {
    const s = decodeState(m.data)
    writes.set(s.id, [...(writes.get(s.id) ?? []), s])
  },
})
t.teardown(() => sub.unsubscribe())
const statusesOf = (id: string) => (writes.get(id) ?? []).map((s) => s.status)

// The executor: `sleep` ms (aborted by the signal), `fail-first` fails attempt 1; every start is counted.
const starts = new Map<string, number>()
const aborted = new Map<string, string>()
const executor: JobExecutor = async ({ job, attempt, signal }) => {
  starts.set(job.id, (starts.get(job.id) ?? 0) + 1)
  const input = job.input as { op: string; ms?: number }
  if (input.op === 'fail-first' && attempt === 1) throw new Error('first attempt fails')
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, input.ms ?? 0)
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer)
        aborted.set(job.id, (signal.reason as { code?: string }).code ?? 'aborted')
        reject(signal.reason as Error)
      },
      { once: true },
    )
  })
  return { attempt }
}
const worker = await startJobWorker({
  nc: platform.nc,
  names,
  store: jobs.enqueue.store,
  results: await openResultStore(platform.nc, names),
  pool: 'fn',
  concurrency: 1,
  executor,
  nodeId: 'deferring',
  log,
  ackWaitMs: 5_000,
  maxRetries: 2,
  retryDelayMs: 50,
  timeoutMs: 30_000,
  runningRecordMs: config.JOB_RUNNING_RECORD_MS,
})
t.teardown(() => worker.stop(1_000))

const enqueue = (input: Record<string, unknown>, extra: Partial<EnqueueRequest> = {}) =>
  enqueueJob(jobs.enqueue, {
    pool: 'fn',
    kind: 'function',
    namespace: 'tests',
    name: 'deferred',
    input,
    userId: env.adminId,
    ...extra,
  })
const settle = async (id: string): Promise<JobState> => {
  const s = await waitForJob(platform.nc, names, jobs.enqueue.store, id, 20_000)
  if (s === null) throw new Error(`job ${id} unknown`)
  return s
}
const quiet = () => new Promise((r) => setTimeout(r, 300))

t.test('a job that ends within JOB_RUNNING_RECORD_MS is recorded once, at its end', async (t) => {
  const events: string[] = []
  const evsub = platform.nc.subscribe(names.subject('events.execution.tests.deferred.>'), {
    callback: (_e, m) => void events.push(String((m.json() as { execution_id: string; status: string }).status)),
  })
  t.teardown(() => evsub.unsubscribe())
  const job = await enqueue({ op: 'sleep', ms: 10 })
  const done = await settle(job.id)
  await quiet()
  t.same(statusesOf(job.id), ['completed'], 'one state write: the create of its end')
  t.match(done, { status: 'completed', attempts: 1, worker: 'deferring', result: { attempt: 1 } })
  t.ok(done.started_at !== null && done.started_at <= (done.finished_at ?? ''), 'started_at is when it ran')
  await eventually(async () => (events.includes('completed') ? true : undefined), 'the completed event')
  t.notOk(events.includes('running'), 'no running event: its first event is its last')
  const exe = await eventually(async () => {
    const r = await env.request('GET', `/executions/${job.id}`, { token: env.adminToken })
    return (r.body as { status: string }).status === 'completed' ? r.body : undefined
  }, 'the execution row')
  t.match(exe, { status: 'completed' })
})

t.test('a job that outlasts it is claimed while it runs, then completed by CAS on that claim', async (t) => {
  const job = await enqueue({ op: 'sleep', ms: RECORD_MS + 600 })
  const running = await eventually(async () => {
    const s = (await jobs.enqueue.store.get(job.id))?.state
    return s?.status === 'running' ? s : undefined
  }, 'the running entry')
  t.match(running, { worker: 'deferring', attempts: 1 })
  t.equal((await settle(job.id)).status, 'completed')
  await quiet()
  t.same(statusesOf(job.id), ['running', 'completed'])
})

t.test('a job under a caller-chosen id is claimed before it runs (the id may name a job that ran)', async (t) => {
  const id = randomUUID()
  await enqueue({ op: 'sleep', ms: 10 }, { id })
  t.equal((await settle(id)).status, 'completed')
  await quiet()
  t.same(statusesOf(id), ['running', 'completed'])
})

t.test('a failed first attempt is retried and counted', async (t) => {
  const job = await enqueue({ op: 'fail-first' })
  const done = await settle(job.id)
  t.match(done, { status: 'completed', attempts: 2, result: { attempt: 2 } })
  await quiet()
  t.same(
    statusesOf(job.id),
    ['queued', 'running', 'completed'],
    'the failure created the entry (back to queued), the retry claimed it first',
  )
})

t.test('a cancel within the window stops the run; nothing else is written', async (t) => {
  const job = await enqueue({ op: 'sleep', ms: 5_000 })
  await eventually(async () => (starts.has(job.id) ? true : undefined), 'the run to start')
  t.equal(await jobs.enqueue.store.get(job.id), null, 'nothing written yet')
  const res = await env.request('POST', `/api/v1/queue/jobs/${job.id}/cancel`, { token: env.adminToken })
  t.same(res.body, { status: 'cancelled', job_id: job.id })
  await eventually(async () => aborted.get(job.id), 'the run to be aborted')
  t.equal(aborted.get(job.id), 'job.cancelled')
  await new Promise((r) => setTimeout(r, RECORD_MS + 300))
  t.same(statusesOf(job.id), ['cancelled'], 'no claim and no outcome after the cancel')
  t.equal(worker.inflight(), 0, 'the slot is free')
})

t.test('a delivery that crossed its cancel on the way is not run', async (t) => {
  // The one slot is busy, so the next job waits in the stream; it is cancelled as the endpoint
  // does (entry created cancelled, the cancel announced) except that its message stays, as if
  // the worker had pulled it before the purge.
  const blocker = await enqueue({ op: 'sleep', ms: 800 })
  await eventually(async () => (starts.has(blocker.id) ? true : undefined), 'the blocker to start')
  const job = await enqueue({ op: 'sleep', ms: 10 })
  const created = await jobs.enqueue.store.create({
    ...job,
    status: 'cancelled',
    error: 'cancelled',
    finished_at: new Date().toISOString(),
  })
  t.ok(created !== null)
  announceCancel(platform.nc, names, job.id)
  t.equal((await settle(blocker.id)).status, 'completed')
  const jsm = await jetstreamManager(platform.nc)
  await eventually(
    async () =>
      (await jsm.streams
        .getMessage(names.stream('JOBS'), { last_by_subj: names.subject(`jobs.fn.${job.id}`) })
        .catch(() => null)) === null
        ? true
        : undefined,
    'its message to be settled',
  )
  t.notOk(starts.has(job.id), 'never run')
  t.equal((await jobs.enqueue.store.get(job.id))?.state.status, 'cancelled')
})
