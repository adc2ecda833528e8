import t from 'tap'
import { prepareJob } from '../../src/jobs/enqueue.ts'
import { localJobs } from '../../src/jobs/local-run.ts'
import { NotClaimed } from '../../src/jobs/run-job.ts'
import { startJobWorkers } from '../../src/jobs/start.ts'
import { watchJob } from '../../src/jobs/wait.ts'
import type { JobContext, JobExecutor } from '../../src/jobs/worker.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { eventually } from '../helpers/eventually.ts'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * A job this process starts itself (src/jobs/local-run.ts) with a speculative executor, as the
 * chat actor starts a turn: the run begins while its claim is written and waits on `claimed`
 * before anything visible; a claim that finds the job not to run leaves no trace of the run. An
 * executor whose result is durable on its own (answersBeforeRecord) answers a waiter of this
 * process before the job's completion is written; the record follows.
 */
const env = await startTestPlatform(t, { ROLES: 'gateway,resources' })
const { platform, config } = env
const jobs = platform.jobs
if (jobs === undefined) throw new Error('job service missing')
const names = natsNames(config.NATS_PREFIX)
const store = jobs.enqueue.store

/** What each run did, by job id: started, and what it did once its claim was decided. */
const runs = new Map<string, { speculative: boolean; outcome?: 'effect' | 'refused'; aborted?: unknown }>()
let release = (): void => undefined
const gate = () => new Promise<void>((r) => (release = r))
let held = gate()

const executor: JobExecutor = Object.assign(
  async (ctx: JobContext) => {
    const run: { speculative: boolean; outcome?: 'effect' | 'refused'; aborted?: unknown } = {
      speculative: ctx.claimed !== undefined,
    }
    runs.set(ctx.job.id, run)
    ctx.signal.addEventListener('abort', () => (run.aborted = ctx.signal.reason), { once: true })
    // the work that needs no claim (a provider call), held until the test lets it go
    await held
    try {
      await ctx.claimed
    } catch (err) {
      run.outcome = 'refused'
      throw err
    }
    run.outcome = 'effect'
    return { reply: `done ${ctx.job.id}` }
  },
  { speculative: true, answersBeforeRecord: true },
)

const workers = await startJobWorkers({
  nc: platform.nc,
  names,
  config,
  log: createLogger({ level: 'silent' }),
  executors: { agent: executor },
  replicas: 1,
})
t.teardown(() => workers.stop())
const local = localJobs(workers.workers.map((w) => ({ pool: w.pool, startLocal: (job) => w.startLocal(job) })))
const user = await env.createUser('local@test.local')
const fresh = () =>
  prepareJob(jobs.enqueue, {
    pool: 'agent',
    kind: 'agent',
    namespace: 'chat',
    name: 'local',
    input: {},
    userId: user.id,
  })

t.test('a speculative run starts before its claim is decided and goes on once it is held', async (t) => {
  held = gate()
  const job = fresh()
  const watch = watchJob(platform.nc, names, store, job.id)
  t.equal(await local.start(job), 'running')
  t.ok(runs.get(job.id)?.speculative, 'the executor was started with a pending claim')
  t.equal(runs.get(job.id)?.outcome, undefined, 'still held: nothing done yet')
  t.equal((await store.get(job.id))?.state.status, 'running', 'the claim is written')
  release()
  const done = await watch.result(10_000)
  t.equal(done?.status, 'completed')
  t.same(done?.result, { reply: `done ${job.id}` }, 'the waiter has the result')
  t.equal(runs.get(job.id)?.outcome, 'effect')
  // the record follows the answer
  const rec = await eventually(async () => {
    const s = (await store.get(job.id))?.state
    return s?.status === 'completed' ? s : undefined
  }, 'the completion recorded')
  t.same(rec.result, { reply: `done ${job.id}` })
})

t.test('a claim that finds the job over stops the speculative run: nothing done, nothing recorded', async (t) => {
  held = gate()
  const job = fresh()
  // a redelivered start of a job that ran already: its entry says how it ended
  const ended = {
    ...job,
    status: 'completed' as const,
    attempts: 1,
    result: { reply: 'the first run' },
    finished_at: new Date().toISOString(),
  }
  const rev = await store.create(ended)
  t.ok(rev !== null)
  t.equal(await local.start(job), 'over')
  const run = runs.get(job.id)
  t.ok(run?.speculative, 'the run had started on speculation')
  t.ok(run?.aborted instanceof NotClaimed, 'its signal is aborted with NotClaimed')
  release()
  await eventually(async () => (run?.outcome === undefined ? undefined : true), 'the run reached its claim')
  t.equal(run?.outcome, 'refused', 'the run stopped at its claim')
  const after = await store.get(job.id)
  t.equal(after?.revision, rev, 'the entry was not written again')
  t.same(after?.state.result, { reply: 'the first run' })
  // the slot was given back: the worker takes the next job
  held = gate()
  const next = fresh()
  t.equal(await local.start(next), 'running')
  release()
  await eventually(
    async () => ((await store.get(next.id))?.state.status === 'completed' ? true : undefined),
    'the next job ran',
  )
})
