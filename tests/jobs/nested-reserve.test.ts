import t from 'tap'
import { enqueueJob } from '../../src/jobs/enqueue.ts'
import { topLevelCap } from '../../src/jobs/nested-reserve.ts'
import { startJobWorkers } from '../../src/jobs/start.ts'
import { waitForJob } from '../../src/jobs/wait.ts'
import type { JobContext, JobExecutor } from '../../src/jobs/worker.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * SHARED_POOL_RESERVE (src/jobs/nested-reserve.ts): with 2 function slots and 1 reserved, a
 * top-level job that calls a nested one and waits for it (as a function calling the API does,
 * holding its slot) never finds every slot taken by top-level jobs: at most one top-level job runs
 * at a time, and the nested calls run in the reserved slot. Without the reserve, two such parents
 * would take both slots and wait for children that find none.
 */
const env = await startTestPlatform(t, {
  ROLES: 'gateway,resources',
  QUEUE_FUNCTION_CONCURRENCY: '2',
  SHARED_POOL_RESERVE: '1',
  // the per-user share would also hold one user to one job at a time: lift it, so the reserve is what is seen
  FUNCTION_MAX_CONCURRENT_PER_USER: '10',
})
const { platform, config } = env
const jobs = platform.jobs
if (jobs === undefined) throw new Error('job service missing')
const names = natsNames(config.NATS_PREFIX)
const user = await env.createUser('reserve@test.local')

let parentsRunning = 0
let mostParents = 0
const executor: JobExecutor = async (ctx: JobContext) => {
  const input = ctx.job.input as { op: 'parent' | 'child' }
  if (input.op === 'child') return { child: true }
  parentsRunning++
  mostParents = Math.max(mostParents, parentsRunning)
  try {
    // the nested call, waited for while this job holds its slot (no ctx.blocking: an HTTP call from a sandbox cannot lend it)
    const child = await enqueueJob(jobs.enqueue, {
      pool: 'fn',
      kind: 'function',
      namespace: 't',
      name: 'child',
      input: { op: 'child' },
      userId: user.id,
      parent: { id: ctx.job.id, depth: ctx.job.depth ?? 0 },
      maxAttempts: 1,
    })
    const done = await waitForJob(platform.nc, names, jobs.store, child.id, 20_000)
    if (done?.status !== 'completed') throw new Error(`nested call ended ${String(done?.status)}`)
    return { parent: true }
  } finally {
    parentsRunning--
  }
}

const workers = await startJobWorkers({
  nc: platform.nc,
  names,
  config,
  log: createLogger({ level: 'silent' }),
  executors: { fn: executor },
  replicas: 1,
})
t.teardown(() => workers.stop())

t.test('the cap: slots minus the reserve, at least one; no gate without a reserve', async (t) => {
  t.equal(topLevelCap({ SHARED_POOL_RESERVE: 1, QUEUE_FUNCTION_CONCURRENCY: 2 }, 1), 1)
  t.equal(topLevelCap({ SHARED_POOL_RESERVE: 3, QUEUE_FUNCTION_CONCURRENCY: 10 }, 2), 17)
  t.equal(
    topLevelCap({ SHARED_POOL_RESERVE: 5, QUEUE_FUNCTION_CONCURRENCY: 2 }, 1),
    1,
    'a reserve of every slot leaves one to top-level jobs',
  )
  t.equal(topLevelCap({ SHARED_POOL_RESERVE: 0, QUEUE_FUNCTION_CONCURRENCY: 2 }, 1), undefined)
})

t.test('parents that wait for nested calls all complete: the reserved slot runs the children', async (t) => {
  const parents = await Promise.all(
    [1, 2, 3].map(() =>
      enqueueJob(jobs.enqueue, {
        pool: 'fn',
        kind: 'function',
        namespace: 't',
        name: 'parent',
        input: { op: 'parent' },
        userId: user.id,
        maxAttempts: 1,
      }),
    ),
  )
  const ends = await Promise.all(parents.map((p) => waitForJob(platform.nc, names, jobs.store, p.id, 30_000)))
  t.same(
    ends.map((e) => e?.status),
    ['completed', 'completed', 'completed'],
  )
  t.equal(mostParents, 1, 'never more top-level jobs than slots minus the reserve')
})
