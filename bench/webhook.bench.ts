import { removeTempDir, startPlatformChild, tempDir, type ServerChild } from './lib/children.ts'
import { childPids } from './lib/cpu.ts'
import { measure } from './lib/load.ts'
import { pooled, sequentialRun, type SequentialRun } from './lib/sequential.ts'
import type { Benchmark, Row } from './lib/types.ts'

/*
 * A webhook call (`POST /webhooks/bench/noop`: the gateway matches the path from memory, the
 * webhook service runs the function as a job and answers its result) against
 * `POST /functions/bench/noop/execute` of the same no-op function, on one platform process
 * (ROLES=all: gateway, services, workers, warm sandboxes). Both carry the same bearer token, so the
 * caller's authentication costs the same; a third pair is the anonymous webhook (requires_auth
 * false, run as the owner). Latency one request at a time (the target: webhook p50 ≤ 1.2×
 * execute p50), then req/s and CPU per call at autocannon's 50 connections. BENCH_WEBHOOK_SAMPLES
 * (default 300) sets the one-at-a-time samples.
 */
const NAME = 'webhook'
const SAMPLES = Number(process.env['BENCH_WEBHOOK_SAMPLES'] ?? 300)
const LIMIT = 1.2
const EXECUTE_ONE = 'POST /functions/bench/noop/execute, one at a time'
const EXECUTE_LOAD = 'POST /functions/bench/noop/execute, 50 connections'

async function run(): Promise<Row[]> {
  const rows: Row[] = []
  const dataDir = tempDir('bench-webhook-')
  let platform: ServerChild | undefined
  try {
    process.stderr.write('  starting platform...\n')
    platform = await startPlatformChild(dataDir, { LOG_LEVEL: process.env['BENCH_WEBHOOK_LOG'] ?? 'warn' })
    const { token } = platform.info
    if (token === undefined) throw new Error('platform child reported no token')
    const base = `http://127.0.0.1:${String(platform.info.port)}`
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
    const post = async (path: string, body: unknown) => {
      const r = await fetch(`${base}${path}`, { method: 'POST', headers: auth, body: JSON.stringify(body) })
      if (r.status !== 201) throw new Error(`POST ${path}: ${String(r.status)} ${await r.text()}`)
    }
    await post('/api/v1/functions', {
      namespace: 'bench',
      name: 'noop',
      code: 'def handler(input, context):\n    return None\n',
    })
    await post('/api/v1/webhooks', {
      path: 'bench/noop',
      function_namespace: 'bench',
      function_name: 'noop',
      requires_auth: true,
    })
    await post('/api/v1/webhooks', {
      path: 'bench/noop-anon',
      function_namespace: 'bench',
      function_name: 'noop',
      requires_auth: false,
    })
    const anon = { 'content-type': 'application/json' }
    const cases = [
      {
        label: 'POST /functions/bench/noop/execute',
        url: `${base}/functions/bench/noop/execute`,
        headers: auth,
        body: JSON.stringify({ input: { n: 1 } }),
      },
      {
        label: 'POST /webhooks/bench/noop (bearer)',
        url: `${base}/webhooks/bench/noop`,
        headers: auth,
        body: JSON.stringify({ n: 1 }),
      },
      {
        label: 'POST /webhooks/bench/noop-anon (anonymous, as the owner)',
        url: `${base}/webhooks/bench/noop-anon`,
        headers: anon,
        body: JSON.stringify({ n: 1 }),
      },
    ]
    for (const c of cases) {
      const r = await fetch(c.url, { method: 'POST', headers: c.headers, body: c.body })
      if (r.status !== 200) throw new Error(`POST ${c.url}: ${String(r.status)} ${await r.text()}`)
    }
    const pid = platform.pid
    const helperPids = childPids(pid)
    // one at a time, in rounds alternating the cases, so a change of the shared host's load hits all alike
    const ROUNDS = 3
    const one = new Map<string, SequentialRun[]>()
    for (let round = 0; round < ROUNDS; round++) {
      for (const c of cases) {
        process.stderr.write(`  one at a time (round ${String(round + 1)}/${String(ROUNDS)}): ${c.label}\n`)
        const m = await sequentialRun(
          { url: c.url, method: 'POST', headers: c.headers, body: c.body, pid },
          { samples: Math.ceil(SAMPLES / ROUNDS) },
          { samples: round === 0 ? 30 : 5 },
        )
        one.set(c.label, [...(one.get(c.label) ?? []), m])
      }
    }
    for (const [i, c] of cases.entries()) {
      const row: Row = { benchmark: NAME, case: `${c.label}, one at a time`, ...pooled(one.get(c.label) ?? [], c.url) }
      rows.push(i === 0 ? { ...row, baseline: true } : { ...row, reference: EXECUTE_ONE, p50Limit: LIMIT })
    }
    for (const [i, c] of cases.entries()) {
      process.stderr.write(`  50 connections: ${c.label}\n`)
      const m = await measure({ url: c.url, method: 'POST', headers: c.headers, body: c.body, pid, helperPids })
      rows.push({
        benchmark: NAME,
        case: `${c.label}, 50 connections`,
        ...m,
        ...(i === 0 ? {} : { reference: EXECUTE_LOAD }),
      })
    }
  } finally {
    await platform?.stop()
    removeTempDir(dataDir)
  }
  return rows
}

const bench: Benchmark = {
  name: NAME,
  description:
    'webhook → no-op function → response vs POST /functions/{ns}/{name}/execute (p50 one at a time, req/s and CPU at load)',
  run,
}
export default bench
