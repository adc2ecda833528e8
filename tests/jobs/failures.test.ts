import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { enqueueJob } from '../../src/jobs/enqueue.ts'
import type { JobState, Pool } from '../../src/jobs/job-state.ts'
import { waitForJob } from '../../src/jobs/wait.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { startNats } from '../../src/platform/local-services.ts'
import { listMembers, workersBucket } from '../../src/platform/heartbeat.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { kill9, spawnReady } from '../helpers/child.ts'
import { eventually } from '../helpers/eventually.ts'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { EFFECTS_TABLE, GATES_TABLE, type TestInput } from './test-executors.ts'

/*
 * Failure tests with real processes: workers are child processes killed with SIGKILL mid-job, and
 * a dedicated nats-server is killed with SIGKILL under load and restarted on the same store.
 */
const WORKER = join(import.meta.dirname, 'worker-process.ts')

interface Teardown {
  teardown(fn: () => unknown): void
}

async function spawnWorker(
  t: Teardown,
  env: TestPlatform,
  pools: Pool[],
  natsUrl = env.config.NATS_URL,
  heartbeatSeconds = 0.5,
  extra: Record<string, string> = {},
): Promise<{ proc: ChildProcess; nodeIds: string[] }> {
  const { proc, ready } = await spawnReady(t, WORKER, {
    NATS_URL: natsUrl,
    NATS_PREFIX: env.config.NATS_PREFIX,
    TEST_DATABASE_URL: env.databaseUrl,
    POOLS: pools.join(','),
    QUEUE_ACK_WAIT_SECONDS: String(env.config.QUEUE_ACK_WAIT_SECONDS),
    QUEUE_RETRY_DELAY_SECONDS: '0.05',
    QUEUE_HEARTBEAT_SECONDS: String(heartbeatSeconds),
    LOG_LEVEL: 'warn',
    ...extra,
  })
  return { proc, nodeIds: ready.split(',') }
}

function helpers(env: TestPlatform) {
  const jobs = env.platform.jobs
  if (jobs === undefined) throw new Error('job service missing')
  const names = natsNames(env.config.NATS_PREFIX)
  return {
    jobs,
    enqueue: (input: TestInput, pool: Pool = 'fn') =>
      enqueueJob(jobs.enqueue, {
        pool,
        kind: pool === 'fn' ? 'function' : 'agent',
        namespace: 'tests',
        name: 'failure',
        input,
        userId: env.adminId,
      }),
    settle: async (id: string, ms = 60_000): Promise<JobState> => {
      const s = await waitForJob(env.platform.nc, names, jobs.enqueue.store, id, ms)
      if (s === null) throw new Error(`job ${id} unknown`)
      return s
    },
    runningOn: (id: string) =>
      eventually(async () => {
        const s = (await jobs.enqueue.store.get(id))?.state
        return s?.status === 'running' ? (s.worker ?? '') : undefined
      }, `job ${id} to start`),
  }
}

t.test('kill -9 of workers mid-job', async (t) => {
  const env = await startTestPlatform(t, { ROLES: 'gateway,resources', QUEUE_ACK_WAIT_SECONDS: '2' })
  await env.sql(EFFECTS_TABLE)
  const h = helpers(env)

  await t.test('a function job completes on another worker and its effect is applied once', async (t) => {
    const first = await spawnWorker(t, env, ['fn'])
    const job = await h.enqueue({ op: 'effect', ms: 1500 })
    t.ok(first.nodeIds.includes(await h.runningOn(job.id)), 'running on the first worker')
    await kill9(first.proc)
    const second = await spawnWorker(t, env, ['fn'])
    const done = await h.settle(job.id)
    t.equal(done.status, 'completed')
    t.equal(done.attempts, 2, 'the lost attempt counts')
    t.ok(second.nodeIds.includes(done.worker ?? ''), 'finished by the second worker')
    t.same(await env.sql('select runs from test_effects where job_id = $1', [job.id]), [{ runs: 1 }])
    await kill9(second.proc)
  })

  await t.test('an agent job ends failed with an error, not stuck', async (t) => {
    const first = await spawnWorker(t, env, ['agent'])
    const job = await h.enqueue({ op: 'sleep', ms: 5000 }, 'agent')
    await h.runningOn(job.id)
    await kill9(first.proc)
    const second = await spawnWorker(t, env, ['agent'])
    const done = await h.settle(job.id)
    t.equal(done.status, 'failed')
    t.match(done.error, { code: 'job.worker_lost', message: /worker lost/ })
    t.equal(done.attempts, 1, 'not retried')
    await kill9(second.proc)
  })

  await t.test('a job that crashes its worker is redelivered and completed by the replacement', async (t) => {
    const job = await h.enqueue({ op: 'crash-once' })
    // crash-once kills its worker on attempt 1 only; the replacement completes attempt 2.
    const first = await spawnWorker(t, env, ['fn'])
    await eventually(
      async () => (first.proc.exitCode !== null || first.proc.signalCode !== null ? true : undefined),
      'the worker to die',
    )
    await spawnWorker(t, env, ['fn'])
    const done = await h.settle(job.id)
    t.equal(done.status, 'completed')
    t.equal(done.attempts, 2)
  })
})

t.test('with JOB_RUNNING_RECORD_MS, kill -9 of a worker whose job wrote nothing yet loses no job', async (t) => {
  const env = await startTestPlatform(t, { ROLES: 'gateway,resources', QUEUE_ACK_WAIT_SECONDS: '2' })
  await env.sql(EFFECTS_TABLE)
  await env.sql(GATES_TABLE)
  const h = helpers(env)
  const first = await spawnWorker(t, env, ['fn'], undefined, 0.5, { JOB_RUNNING_RECORD_MS: '60000' })
  // The job announces its start and writes its effect only once released (test_gates), and the
  // release comes after the first worker is dead: the killed run cannot reach its effect however
  // slow the machine (a sleep before the effect once lost that race on a loaded machine).
  const job = await h.enqueue({ op: 'effect', gated: true })
  const started = () => env.sql<{ started: number }>('select started from test_gates where job_id = $1', [job.id])
  await eventually(async () => ((await started()).length > 0 ? true : undefined), 'the first run to start')
  // Its run is in the worker's heartbeat (every 0.5 s), not in the state: nothing is written yet.
  const workers = await workersBucket(env.platform.nc, natsNames(env.config.NATS_PREFIX))
  await eventually(async () => {
    const members = await listMembers(workers, 'fn')
    return members.some(
      (m) =>
        first.nodeIds.includes(m.nodeId) &&
        Array.isArray(m.info['jobs']) &&
        (m.info['jobs'] as unknown[]).includes(job.id),
    )
      ? true
      : undefined
  }, 'the first worker to show it in its heartbeat')
  t.equal(await h.jobs.enqueue.store.get(job.id), null, 'no state entry while it runs')
  await kill9(first.proc)
  await env.sql('update test_gates set released = true where job_id = $1', [job.id])
  const second = await spawnWorker(t, env, ['fn'], undefined, 0.5, { JOB_RUNNING_RECORD_MS: '60000' })
  const done = await h.settle(job.id)
  t.equal(done.status, 'completed', 'redelivered after ack_wait and run to its end')
  t.ok(second.nodeIds.includes(done.worker ?? ''), 'by the second worker')
  t.equal(done.attempts, 1, 'the lost attempt wrote nothing, so it is not counted (the price of the setting)')
  t.same(await started(), [{ started: 2 }], 'both runs started')
  t.same(
    await env.sql('select runs from test_effects where job_id = $1', [job.id]),
    [{ runs: 1 }],
    'the killed run never reached its effect',
  )
  await kill9(second.proc)
})

t.test('kill -9 of nats-server under load loses no accepted job and runs none twice', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nats-kill-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const log = createLogger({ level: 'silent' })
  let nats = await startNats({ dir, log })
  const port = Number(new URL(nats.url).port)
  t.teardown(() => nats.stop())
  const env = await startTestPlatform(t, {
    ROLES: 'gateway,resources',
    NATS_URL: nats.url,
    QUEUE_ACK_WAIT_SECONDS: '10',
  })
  await env.sql(EFFECTS_TABLE)
  const h = helpers(env)
  // Beats every 2 s: the restart (about 1.5 s) must not make a live worker look dead (3 missed
  // beats), or its in-flight job would be taken over and run twice.
  await spawnWorker(t, env, ['fn'], nats.url, 2)
  await spawnWorker(t, env, ['fn'], nats.url, 2)

  const total = 300
  const accepted: string[] = []
  let rejected = 0
  let next = 0
  let killed = false
  let restarted: Promise<void> = Promise.resolve()
  const producer = async () => {
    while (next < total) {
      next++
      try {
        accepted.push((await h.enqueue({ op: 'effect' })).id)
      } catch {
        rejected++
      }
      if (!killed && accepted.length >= 100) {
        killed = true
        process.kill(nats.pid, 'SIGKILL')
        restarted = (async () => {
          await new Promise((r) => setTimeout(r, 1000))
          nats = await startNats({ dir, port, log })
        })()
      }
    }
  }
  await Promise.all(Array.from({ length: 8 }, producer))
  await restarted
  t.ok(killed, 'the server was killed mid-run')
  t.ok(accepted.length >= 100, `accepted ${String(accepted.length)}, rejected ${String(rejected)}`)
  const states = await Promise.all(accepted.map((id) => h.settle(id, 90_000)))
  const notDone = states.filter((s) => s.status !== 'completed')
  t.same(
    notDone.map((s) => `${s.id}:${s.status}`),
    [],
    'every accepted job completed',
  )
  const rows = await env.sql<{ n: number; max: number }>(
    'select count(*)::int as n, max(runs)::int as max from test_effects where job_id = any($1::uuid[])',
    [accepted],
  )
  const twice = await env.sql<{ job_id: string; runs: number }>('select job_id, runs from test_effects where runs > 1')
  const detail = twice.map((r) => ({ ...r, state: states.find((s) => s.id === r.job_id) }))
  t.same(rows[0], { n: accepted.length, max: 1 }, `each effect applied exactly once ${JSON.stringify(detail)}`)
})
