import t from 'tap'
import { join } from 'node:path'
import { ENCRYPTION_KEY, SECRET_KEY, startTestPlatform } from '../helpers/env.ts'
import { kill9, spawnReady } from '../helpers/child.ts'
import { eventually } from '../helpers/eventually.ts'

/*
 * The container pool's desired state lives in its pool actor (actors/pool/), not in a process:
 * worker processes run as children (ROLES=workers) beside a platform with the gateway, the
 * resource service and the actor host. A scale survives kill -9 of the worker process, a new
 * process converges to the size and generation, a reload recycles each process's idle sandboxes
 * exactly once, and processes that were unreachable (SIGSTOP) converge when they come back.
 */
const WORKER = join(import.meta.dirname, 'pool-worker.ts')

interface NodeStats {
  node: string
  pid: number
  total: number
  starting: number
  names: string[]
  generation: number
  share: number | null
  reloads: number
}
interface Stats {
  total: number
  desired: { target: number | null; generation: number }
  nodes: NodeStats[]
}

t.test('pool actors', async (t) => {
  const env = await startTestPlatform(t, {
    ROLES: 'gateway,resources,actors',
    SANDBOX_CONTROL_TIMEOUT_SECONDS: '15',
    CONTAINER_RESTART_TIMEOUT_SECONDS: '5',
  })
  const childEnv = {
    NATS_URL: env.config.NATS_URL,
    NATS_PREFIX: env.config.NATS_PREFIX,
    DATABASE_URL: env.databaseUrl,
    SECRET_KEY,
    ENCRYPTION_KEY,
    DATA_DIR: env.config.DATA_DIR,
    LOG_LEVEL: process.env['POOL_TEST_LOG_LEVEL'] ?? 'silent',
    ...(process.env['POOL_WORKER_LOG'] === undefined ? {} : { POOL_WORKER_LOG: process.env['POOL_WORKER_LOG'] }),
    // a process three beats late (3 s) no longer counts, so a killed one stops holding a share soon
    QUEUE_HEARTBEAT_SECONDS: '1',
    SANDBOX_MIN_SIZE: '1',
    SANDBOX_MIN_IDLE: '0',
    SANDBOX_MAX_SIZE: '6',
  }
  const stats = async () => {
    const r = await env.request('GET', '/api/v1/containers/stats')
    if (r.status !== 200) throw new Error(`stats: ${String(r.status)} ${r.text}`)
    return r.body as Stats
  }
  /** Stats once every live process runs its share with nothing starting, and `ok` holds. */
  const settled = async (what: string, ok: (s: Stats) => boolean) => {
    let last: Stats | undefined
    try {
      return await eventually(
        async () => {
          const s = (last = await stats())
          return s.nodes.every((n) => n.starting === 0 && (n.share === null || n.total === n.share)) && ok(s)
            ? s
            : undefined
        },
        what,
        60_000,
        200,
      )
    } catch (err) {
      throw new Error(`${String(err)}; last stats ${JSON.stringify(last)}`, { cause: err })
    }
  }

  // processes live as long as this test (a subtest's teardown would kill the ones it started)
  const top = t
  const w1 = await spawnReady(top, WORKER, childEnv)
  await settled('the first worker process with its configured sandbox', (s) => s.nodes.length === 1 && s.total === 1)

  await t.test('scale persists across kill -9 of the worker process', async (t) => {
    const up = await env.request('POST', '/api/v1/containers/scale', { body: { target: 3 } })
    t.same(up.body, { action: 'scale_up', previous: 1, current: 3, added: 2 })
    await settled('three sandboxes', (s) => s.total === 3)
    await kill9(w1.proc)
    const w2 = await spawnReady(top, WORKER, childEnv)
    const s = await settled(
      'the restarted process back at the scaled size',
      (s) => s.nodes.length === 1 && s.nodes[0]?.pid === w2.proc.pid && s.total === 3,
    )
    t.equal(s.desired.target, 3, 'the target is the pool actor’s')
    t.equal(s.nodes[0]?.share, 3)
  })

  await t.test('a new worker process converges to the desired size and generation', async (t) => {
    const reload = await env.request('POST', '/api/v1/containers/reload')
    t.match(reload.body, { status: 'completed', idle_containers: 3, success: 3, failed: 0, generation: 1 })
    await spawnReady(top, WORKER, childEnv)
    const s = await settled('two processes sharing three sandboxes', (s) => s.nodes.length === 2 && s.total === 3)
    t.same(s.nodes.map((n) => n.share).sort(), [1, 2], 'the target split over the live processes')
    t.same(
      s.nodes.map((n) => n.generation),
      [1, 1],
      'both at generation 1',
    )
    t.same(s.nodes.map((n) => n.reloads).sort(), [0, 1], 'the new process took the generation without recycling')
  })

  await t.test('reload bumps the generation and each process recycles once', async (t) => {
    const before = await settled('two processes sharing three sandboxes', (s) => s.nodes.length === 2 && s.total === 3)
    const oldNames = before.nodes.flatMap((n) => n.names)
    const reloads = new Map(before.nodes.map((n) => [n.node, n.reloads]))
    const reload = await env.request('POST', '/api/v1/containers/reload')
    t.match(reload.body, { status: 'completed', idle_containers: 3, success: 3, failed: 0, generation: 2 })
    const after = await stats()
    t.same(
      after.nodes.map((n) => n.generation),
      [2, 2],
    )
    for (const n of after.nodes) t.equal(n.reloads, (reloads.get(n.node) ?? 0) + 1, `process ${n.node} recycled once`)
    const newNames = after.nodes.flatMap((n) => n.names)
    t.same(
      newNames.filter((n) => oldNames.includes(n)),
      [],
      'every idle sandbox replaced',
    )
    // another change of the pool state (the same target again) is applied by both processes,
    // and neither recycles a second time
    t.match((await env.request('POST', '/api/v1/containers/scale', { body: { target: 3 } })).body, {
      previous: 3,
      current: 3,
    })
    const later = await stats()
    for (const n of later.nodes)
      t.equal(n.reloads, (reloads.get(n.node) ?? 0) + 1, `process ${n.node} did not recycle again`)
    t.same(later.nodes.flatMap((n) => n.names).sort(), [...newNames].sort(), 'the same sandboxes')
  })

  await t.test('processes that were unreachable converge when they return', async (t) => {
    const pids = (await stats()).nodes.map((n) => n.pid)
    const cont = (pid: number) => {
      try {
        process.kill(pid, 'SIGCONT')
      } catch {
        // already gone
      }
    }
    t.teardown(() => pids.forEach(cont))
    // stopped processes still count as live for three beats: they are waited for, and do not answer
    for (const pid of pids) process.kill(pid, 'SIGSTOP')
    const scale = await env.request('POST', '/api/v1/containers/scale', { body: { target: 4 } })
    t.equal(scale.status, 504, 'nobody confirmed in time')
    t.match(scale.body, { code: 'sandbox.not_applied' })
    t.equal((await stats()).desired.target, 4, 'the pool actor kept the target')
    pids.forEach(cont)
    const back = await settled(
      'both back, sharing four sandboxes',
      (s) => s.nodes.length === 2 && s.total === 4 && s.nodes.every((n) => n.share === 2),
    )
    t.equal(back.total, 4)

    // a restart nobody could answer for completely is not a 404
    process.kill(pids[0] as number, 'SIGSTOP')
    const unsure = await env.request('POST', '/api/v1/system/containers/no-such-box/restart')
    t.equal(unsure.status, 504, 'an unknown name with one process silent: not a 404')
    cont(pids[0] as number)
    const s = await settled('both live again', (s) => s.nodes.length === 2)
    const name = s.nodes[0]?.names[0] ?? ''
    t.same((await env.request('POST', `/api/v1/system/containers/${name}/restart`)).body, {
      status: 'restarted',
      container: name,
    })
    t.equal((await env.request('POST', '/api/v1/system/containers/no-such-box/restart')).status, 404)
  })
})
