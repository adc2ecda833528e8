import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { eventually } from '../helpers/eventually.ts'

/*
 * The container and shared-worker administration against a platform whose worker
 * runs a warm bubblewrap pool: stats, scale up and down (idle only), restart by name (404 for
 * unknown names), recycling after SANDBOX_MAX_EXECUTIONS, destroy-on-error, shared workers.
 */
let env: TestPlatform
interface Stats {
  idle: number
  in_use: number
  total: number
  max_size: number
  nodes: { names: string[]; recycled: number; destroyed_on_error: number }[]
}
const stats = async () => (await env.request('GET', '/api/v1/containers/stats')).body as Stats

t.before(async () => {
  env = await startTestPlatform(t, {
    SANDBOX_MIN_SIZE: '2',
    SANDBOX_MIN_IDLE: '1',
    SANDBOX_MAX_SIZE: '6',
    SANDBOX_MAX_EXECUTIONS: '3',
    DEFAULT_WORKER_COUNT: '2',
  })
  for (const [name, code, extra] of [
    ['hello', 'def handler(input, context):\n    return "hello"\n', {}],
    ['slow', 'import time\ndef handler(input, context):\n    time.sleep(10)\n', { timeout: 1 }],
    ['trusted', 'import os\ndef handler(input, context):\n    return os.getpid()\n', { shared_pool: true }],
  ] as const) {
    const r = await env.request('POST', '/api/v1/functions', { body: { namespace: 'ops', name, code, ...extra } })
    if (r.status !== 201) throw new Error(r.text)
  }
})

t.test('stats see the pool of every worker process', async (t) => {
  const s = await eventually(async () => {
    const x = await stats()
    return x.total === 2 ? x : undefined
  }, 'two warm sandboxes')
  t.equal(s.idle, 2)
  t.equal(s.in_use, 0)
  t.equal(s.max_size, 6)
  t.equal(s.nodes.length, 1, 'one worker process')
})

t.test('the system health lists the sandboxes of every worker process', async (t) => {
  const h = (await env.request('GET', '/api/v1/system/health')).body as {
    services: { name: string; status: string; health: string; details: Record<string, unknown> }[]
    warnings: { level: string }[]
  }
  t.match(
    h.services.find((s) => s.name === 'sandboxes'),
    { status: 'up', health: 'healthy', details: { containers: 2, unhealthy: 0 } },
  )
  t.same(
    h.warnings.filter((w) => w.level === 'critical'),
    [],
    'the whole platform in one process: no critical warning',
  )
})

t.test('scale up, then down: only idle sandboxes are removed', async (t) => {
  const up = await env.request('POST', '/api/v1/containers/scale', { body: { target: 4 } })
  t.same(up.body, { action: 'scale_up', previous: 2, current: 4, added: 2 })
  await eventually(async () => ((await stats()).total === 4 ? true : undefined), 'four sandboxes')
  const down = await env.request('POST', '/api/v1/containers/scale', { body: { target: 1 } })
  t.match(down.body, { action: 'scale_down', previous: 4, current: 1, removed: 3 })
  const bad = await env.request('POST', '/api/v1/containers/scale', { body: { target: -1 } })
  t.equal(bad.status, 422)
})

t.test('sandboxes are recycled after SANDBOX_MAX_EXECUTIONS and destroyed on error', async (t) => {
  for (let i = 0; i < 4; i++)
    t.equal(
      (
        (await env.request('POST', '/functions/ops/hello/execute', { body: { input: null } })).body as {
          result: string
        }
      ).result,
      'hello',
    )
  t.ok(((await stats()).nodes[0]?.recycled ?? 0) >= 1, 'recycled after 3 executions')
  const slow = await env.request('POST', '/functions/ops/slow/execute', { body: { input: null } })
  t.equal((slow.body as { status: string }).status, 'timeout')
  t.ok(((await stats()).nodes[0]?.destroyed_on_error ?? 0) >= 1, 'the timed-out sandbox was destroyed')
  t.equal(
    ((await env.request('POST', '/functions/ops/hello/execute', { body: { input: null } })).body as { status: string })
      .status,
    'success',
    'and replaced',
  )
})

t.test('restart by name; unknown names answer 404', async (t) => {
  const s = await eventually(async () => {
    const x = await stats()
    return x.idle >= 1 ? x : undefined
  }, 'an idle sandbox')
  const name = s.nodes[0]?.names[0] ?? ''
  const r = await env.request('POST', `/api/v1/system/containers/${name}/restart`)
  t.same(r.body, { status: 'restarted', container: name })
  await eventually(
    async () => ((await stats()).nodes[0]?.names.includes(name) === false ? true : undefined),
    'the old sandbox gone',
  )
  const missing = await env.request('POST', '/api/v1/system/containers/no-such-box/restart')
  t.equal(missing.status, 404)
  const reload = await env.request('POST', '/api/v1/containers/reload')
  t.match(reload.body, { status: 'completed', failed: 0 })
})

t.test('shared workers run trusted functions round-robin; count, list, scale, reload', async (t) => {
  const pids = new Set<number>()
  for (let i = 0; i < 4; i++)
    pids.add(
      (
        (await env.request('POST', '/functions/ops/trusted/execute', { body: { input: null } })).body as {
          result: number
        }
      ).result,
    )
  t.equal(pids.size, 2, 'two shared workers took turns')
  t.same((await env.request('GET', '/api/v1/workers/count')).body, { count: 2 })
  t.equal(((await env.request('GET', '/api/v1/workers')).body as unknown[]).length, 2)
  t.match((await env.request('POST', '/api/v1/workers/scale', { body: { target_count: 3 } })).body, {
    action: 'scale_up',
    previous_count: 2,
    current_count: 3,
  })
  t.match((await env.request('POST', '/api/v1/workers/reload')).body, {
    status: 'completed',
    total_workers: 3,
    failed: 0,
  })
  const user = await env.createUser('ops-user@test.local')
  t.equal((await env.request('GET', '/api/v1/workers', { token: user.token })).status, 403, 'admin only')
})
