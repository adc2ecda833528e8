import { connect } from '@nats-io/transport-node'
import t from 'tap'
import { enqueueJob } from '../../src/jobs/enqueue.ts'
import type { PulledMessage } from '../../src/jobs/puller.ts'
import { ShareLines } from '../../src/jobs/share-lines.ts'
import { startJobWorkers } from '../../src/jobs/start.ts'
import { waitForJob } from '../../src/jobs/wait.ts'
import type { JobExecutor } from '../../src/jobs/worker.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { startTestPlatform } from '../helpers/env.ts'
import { readServices } from '../setup/services.ts'

/*
 * The per-user fair share with its waiting lines (src/jobs/user-share.ts, share-lines.ts): a job
 * over its user's share waits in this process, in arrival order, and takes the place of the user's
 * job that ends, without going back to the queue; another user's job meanwhile takes a free slot.
 */
const env = await startTestPlatform(t, {
  ROLES: 'gateway,resources',
  QUEUE_FUNCTION_CONCURRENCY: '4',
  FUNCTION_MAX_CONCURRENT_PER_USER: '1',
  SHARED_POOL_RESERVE: '0',
})
const { platform, config } = env
const jobs = platform.jobs
if (jobs === undefined) throw new Error('job service missing')
const names = natsNames(config.NATS_PREFIX)
const alice = await env.createUser('alice-lines@test.local')
const bob = await env.createUser('bob-lines@test.local')

/** Starts in the order they happened: `<user>:<index>`. */
const started: string[] = []
let aliceRunning = 0
let aliceMost = 0
const holds = new Map<string, () => void>()
let bobRan = () => {}
const bobStarted = new Promise<void>((resolve) => (bobRan = resolve))
const executor: JobExecutor = async ({ job }) => {
  const input = job.input as { who: string; i: number; hold?: boolean }
  started.push(`${input.who}:${String(input.i)}`)
  if (input.who === 'bob') {
    bobRan()
    return { ok: true }
  }
  aliceRunning++
  aliceMost = Math.max(aliceMost, aliceRunning)
  try {
    if (input.hold === true) await new Promise<void>((resolve) => holds.set(job.id, resolve))
    return { ok: true }
  } finally {
    aliceRunning--
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

t.test(
  "one user's burst runs in arrival order, one at a time, none handed back; another user is not held up",
  async (t) => {
    // Every settlement a worker sends goes to $JS.ACK.…: a nak is "-NAK…". None may be sent for
    // these jobs (the old behaviour handed each one back with a delay).
    const watcher = await connect({ servers: readServices().natsUrl })
    t.teardown(() => watcher.close())
    let naks = 0
    const acks = watcher.subscribe(`$JS.ACK.${names.stream('JOBS')}.>`, {
      callback: (_e, m) => {
        if (new TextDecoder().decode(m.data).startsWith('-NAK')) naks++
      },
    })
    await watcher.flush()
    const enqueue = (who: 'alice' | 'bob', i: number, hold = false) =>
      enqueueJob(jobs.enqueue, {
        pool: 'fn',
        kind: 'function',
        namespace: 'lines',
        name: 'probe',
        input: { who, i, hold },
        userId: (who === 'alice' ? alice : bob).id,
      })
    const burst = []
    for (let i = 0; i < 8; i++) burst.push(await enqueue('alice', i, i === 0))
    const other = await enqueue('bob', 0)
    // alice's first job holds her one place until bob's job has run in a free slot
    await bobStarted
    t.same(
      started.filter((s) => s.startsWith('alice')),
      ['alice:0'],
      "alice's others wait while her first runs",
    )
    const first = burst[0]
    if (first === undefined) throw new Error('no job')
    // its executor registers its hold as it starts, which it did before bob's (one slot each)
    for (let tries = 0; !holds.has(first.id); tries++) {
      if (tries > 10_000) throw new Error("alice's first job never started")
      await new Promise((r) => setImmediate(r))
    }
    holds.get(first.id)?.()
    for (const j of [...burst, other]) {
      const s = await waitForJob(platform.nc, names, jobs.store, j.id, 20_000)
      t.equal(s?.status, 'completed', `${j.id} completed`)
    }
    t.same(
      started.filter((s) => s.startsWith('alice')),
      burst.map((_, i) => `alice:${String(i)}`),
      'in arrival order',
    )
    t.equal(aliceMost, 1, 'never more than her share at once')
    await watcher.flush()
    acks.unsubscribe()
    t.equal(naks, 0, 'no job went back to the queue')
  },
)

/** A message that records how it was settled. */
const message = (id: string) => {
  const settled: string[] = []
  const m: PulledMessage = {
    subject: `jobs.fn.${id}`,
    data: new Uint8Array(),
    headers: undefined,
    deliveryCount: 1,
    ack: () => settled.push('ack'),
    nak: () => settled.push('nak'),
    term: () => settled.push('term'),
    working: () => settled.push('working'),
  }
  return { m, settled }
}
const job = (id: string, user: string | null) => ({ id, carried: { id, user_id: user } as never })

t.test(
  'a line is bounded per user, and its jobs go back to the queue after the longest wait or on release',
  async (t) => {
    const lines = new ShareLines({ perUser: 2, maxWaitMs: 50 })
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(message) as [
      ReturnType<typeof message>,
      ReturnType<typeof message>,
      ReturnType<typeof message>,
      ReturnType<typeof message>,
    ]
    t.ok(lines.enter({ m: a.m, ...job('a', 'u1') }))
    t.ok(lines.enter({ m: b.m, ...job('b', 'u1') }))
    t.notOk(lines.enter({ m: c.m, ...job('c', 'u1') }), "u1's line is full")
    t.ok(lines.enter({ m: d.m, ...job('d', null) }), 'another line (jobs without a user)')
    t.equal(lines.next('u1')?.id, 'a', 'oldest first')
    t.equal(lines.size, 2)
    // b and d: nobody takes them; after the longest wait each goes back to the queue, once
    await new Promise<void>((resolve) => {
      const check = () => (b.settled.length > 0 && d.settled.length > 0 ? resolve() : setTimeout(check, 10))
      check()
    })
    t.same(b.settled, ['nak'])
    t.same(d.settled, ['nak'])
    t.same(a.settled, [], 'a job taken from its line is not settled by the line')
    t.equal(lines.size, 0)
    t.equal(lines.next('u1'), undefined)

    const e = message('e')
    const held = new ShareLines({ perUser: 4, maxWaitMs: 60_000 })
    t.ok(held.enter({ m: e.m, ...job('e', 'u2') }))
    held.release()
    t.same(e.settled, ['nak'], 'released: back to the queue at once')
    t.equal(held.size, 0)
  },
)
