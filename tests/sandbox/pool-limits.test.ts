import { readdirSync, readFileSync } from 'node:fs'
import { randomUUID } from 'node:crypto'
import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { eventually } from '../helpers/eventually.ts'

/*
 * Limits the platform owns over the sandbox pool, end to end through the gateway with real
 * bubblewrap sandboxes: one user's long async jobs cannot take every slot (the per-user fair share),
 * and cancelling a running execution kills its sandbox and gives its place back.
 */

/** Host processes whose command line holds `marker` (sandbox processes are visible from the host). */
function processesWith(marker: string): number[] {
  const found: number[] = []
  for (const p of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(p)) continue
    try {
      if (readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(marker)) found.push(Number(p))
    } catch {
      // gone meanwhile
    }
  }
  return found
}

/** A function that starts a child carrying `marker` in its command line, then sleeps. */
const sleeper = (name: string) => ({
  namespace: 'limits',
  name,
  timeout: 120,
  code:
    [
      'import subprocess, sys, time',
      'def handler(input, context):',
      '    subprocess.Popen([sys.executable, "-c", "import time\\ntime.sleep(600)", input["marker"]])',
      '    time.sleep(110)',
      '    return "woke"',
    ].join('\n') + '\n',
})
const quick = {
  namespace: 'limits',
  name: 'quick',
  code: 'def handler(input, context):\n    return {"who": context["user_email"]}\n',
}

async function create(env: TestPlatform, fn: object, token?: string): Promise<void> {
  const res = await env.request('POST', '/api/v1/functions', { body: fn, ...(token === undefined ? {} : { token }) })
  if (res.status !== 201) throw new Error(res.text)
}

async function startAsync(env: TestPlatform, name: string, marker: string): Promise<string> {
  const res = await env.request('POST', `/functions/limits/${name}/execute/async`, { body: { input: { marker } } })
  if (res.status !== 202) throw new Error(res.text)
  return (res.body as { execution_id: string }).execution_id
}

async function statusOf(env: TestPlatform, id: string): Promise<string> {
  return ((await env.request('GET', `/executions/${id}`)).body as { status: string }).status
}

t.test("one user's long async jobs leave sandboxes for another user's synchronous call", async (t) => {
  // 4 slots (2 replicas x 2) over a pool of 4 sandboxes; the share per user is then 2
  const env = await startTestPlatform(t, {
    QUEUE_WORKER_REPLICAS: '2',
    QUEUE_FUNCTION_CONCURRENCY: '2',
    SANDBOX_MAX_SIZE: '4',
    SANDBOX_MIN_SIZE: '1',
  })
  await create(env, sleeper('hog'))
  const b = await env.createUser('limits-b@test.local')
  await create(env, { ...quick, namespace: 'bee' }, b.token)

  const marker = `hog-${randomUUID()}`
  const hogs: string[] = []
  for (let i = 0; i < 6; i++) hogs.push(await startAsync(env, 'hog', marker))
  // two of them run (each left a marked child), the rest wait queued
  await eventually(async () => (processesWith(marker).length >= 2 ? true : undefined), "the first user's jobs running")

  const res = await env.request('POST', '/functions/bee/quick/execute', {
    token: b.token,
    body: { input: null, timeout: 5 },
  })
  t.equal(res.status, 200, res.text)
  const ran = res.body as { execution_id: string; duration_ms: number }
  t.same(
    res.body,
    {
      status: 'success',
      result: { who: 'limits-b@test.local' },
      execution_id: ran.execution_id,
      error: null,
      duration_ms: ran.duration_ms,
    },
    "the other user's call ran",
  )

  const statuses = await Promise.all(hogs.map((id) => statusOf(env, id)))
  t.ok(
    statuses.filter((s) => s === 'running').length <= 2,
    `at most the share of 2 runs at once (${statuses.join(', ')})`,
  )
  t.ok(statuses.filter((s) => s === 'queued').length >= 4, 'the rest wait queued, no attempt spent')

  for (const id of hogs) await env.request('POST', `/api/v1/queue/jobs/${id}/cancel`)
  await eventually(
    async () => (processesWith(marker).length === 0 ? true : undefined),
    "the cancelled jobs' processes gone",
  )
})

t.test('cancelling a running execution kills its sandbox and frees its place', async (t) => {
  // one slot, one sandbox: the next call can only run once the cancelled one gave its sandbox back
  const env = await startTestPlatform(t, {
    QUEUE_WORKER_REPLICAS: '1',
    QUEUE_FUNCTION_CONCURRENCY: '1',
    SANDBOX_MAX_SIZE: '1',
    SANDBOX_MIN_SIZE: '1',
    SANDBOX_MIN_IDLE: '1',
  })
  await create(env, sleeper('long'))
  await create(env, quick)

  const marker = `long-${randomUUID()}`
  const id = await startAsync(env, 'long', marker)
  const pids = await eventually(async () => {
    const found = processesWith(marker)
    return found.length > 0 ? found : undefined
  }, 'the execution running')
  t.equal(await statusOf(env, id), 'running')

  const cancel = await env.request('POST', `/api/v1/queue/jobs/${id}/cancel`)
  t.equal(cancel.status, 200, cancel.text)
  await eventually(
    async () => (processesWith(marker).length === 0 ? true : undefined),
    "the cancelled execution's processes killed",
  )
  t.ok(
    pids.every((p) => !processesWith(marker).includes(p)),
    'the process it started is gone',
  )

  const next = await env.request('POST', '/functions/limits/quick/execute', { body: { input: null, timeout: 5 } })
  t.equal(next.status, 200, next.text)
  t.equal((next.body as { status: string }).status, 'success', `the next execution got the sandbox (${next.text})`)
  t.equal(await statusOf(env, id), 'cancelled')
  const stats = env.platform.sandboxes?.pool?.stats()
  t.ok(stats !== undefined && stats.total <= 1, 'the pool kept its size')
})
