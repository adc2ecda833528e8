import t from 'tap'
import { enqueueJob } from '../../src/jobs/enqueue.ts'
import { startJobWorkers } from '../../src/jobs/start.ts'
import { waitForJob } from '../../src/jobs/wait.ts'
import { createLogger } from '../../src/kernel/log.ts'
import type { Db } from '../../src/platform/db.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { crossingCounter } from '../helpers/crossings.ts'
import { eventually } from '../helpers/eventually.ts'
import { startTestPlatform } from '../helpers/env.ts'
import { EFFECTS_TABLE, testExecutor } from './test-executors.ts'

/*
 * MIRROR_LINGER_MS: a job that ends within the linger costs one execution row write (its newest
 * state), and still gets both public events, `running` before `completed`. A long linger here
 * (1 s, the most allowed) makes the test independent of how fast this machine runs the job.
 */
const env = await startTestPlatform(t, { ROLES: 'gateway,resources,actors', MIRROR_LINGER_MS: '1000' })
const { platform, config } = env
const jobs = platform.jobs
if (jobs === undefined) throw new Error('job service missing')
const names = natsNames(config.NATS_PREFIX)
await env.sql(EFFECTS_TABLE)
const workers = await startJobWorkers({
  nc: platform.nc,
  names,
  config,
  log: createLogger({ level: 'silent' }),
  executors: { fn: testExecutor(env.databaseUrl) },
  replicas: 1,
})
t.teardown(() => workers.stop())
const alice = await env.createUser('alice@test.local')

t.test('a job that ends within the linger: one row write, both events in order', async (t) => {
  const events: string[] = []
  const sub = platform.nc.subscribe(names.subject('events.execution.tests.linger.>'), {
    callback: (_e, m) => void events.push(String((m.json() as { status: string }).status)),
  })
  t.teardown(() => sub.unsubscribe())
  const counter = crossingCounter(platform.nc, platform.db as Db, config.NATS_PREFIX)
  counter.start()
  const job = await enqueueJob(jobs.enqueue, {
    pool: 'fn',
    kind: 'function',
    namespace: 'tests',
    name: 'linger',
    input: { op: 'echo', value: 1 },
    userId: alice.id,
  })
  t.equal((await waitForJob(platform.nc, names, jobs.enqueue.store, job.id, 20_000))?.status, 'completed')
  const row = await eventually(
    async () => (await env.sql<{ status: string }>('select status from executions where id = $1', [job.id]))[0],
    'the execution row',
  )
  t.equal(row.status, 'completed', 'the row is written once, already in its final state')
  await eventually(async () => (events.length >= 2 ? true : undefined), 'both events')
  const writes = counter.stop().filter((x) => x.what === 'pg' && x.detail.startsWith('select executions_upsert('))
  t.equal(writes.length, 1, 'one execution row write for running and completed')
  t.same(events, ['running', 'completed'], 'both events, in order')
})

t.test('MIRROR_LINGER_MS bounds the wait: a job still running is mirrored as running', async (t) => {
  const job = await enqueueJob(jobs.enqueue, {
    pool: 'fn',
    kind: 'function',
    namespace: 'tests',
    name: 'linger',
    input: { op: 'sleep', ms: 6000 },
    userId: alice.id,
  })
  const started = Date.now()
  const row = await eventually(
    async () => (await env.sql<{ status: string }>('select status from executions where id = $1', [job.id]))[0],
    'the execution row',
  )
  t.equal(row.status, 'running')
  t.ok(Date.now() - started < 5000, 'written after the linger, not at the end of the job')
  t.equal((await waitForJob(platform.nc, names, jobs.enqueue.store, job.id, 20_000))?.status, 'completed')
})
