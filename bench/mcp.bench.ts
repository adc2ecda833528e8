import { removeTempDir, startPlatformChild, tempDir, type ServerChild } from './lib/children.ts'
import { childPids } from './lib/cpu.ts'
import { measure } from './lib/load.ts'
import { pooled, sequentialRun, type SequentialRun } from './lib/sequential.ts'
import type { Benchmark, Row } from './lib/types.ts'

/*
 * A function called as an MCP tool (`POST /mcp`, JSON-RPC `tools/call` of `fn.bench.noop`: the
 * MCP handler calls the execute route in memory, src/mcp/route-call.ts) against
 * `POST /functions/bench/noop/execute` of the same no-op function, on one platform process
 * (ROLES=all). Both carry the same bearer token. Latency and CPU one request at a time (the
 * issue's target: MCP ≤ 1.3× the API), then req/s and CPU per call at autocannon's 50
 * connections. BENCH_MCP_SAMPLES (default 300) sets the one-at-a-time samples.
 */
const NAME = 'mcp'
const SAMPLES = Number(process.env['BENCH_MCP_SAMPLES'] ?? 300)
const LIMIT = 1.3
const EXECUTE_ONE = 'POST /functions/bench/noop/execute, one at a time'
const EXECUTE_LOAD = 'POST /functions/bench/noop/execute, 50 connections'

async function run(): Promise<Row[]> {
  const rows: Row[] = []
  const dataDir = tempDir('bench-mcp-')
  let platform: ServerChild | undefined
  try {
    process.stderr.write('  starting platform...\n')
    platform = await startPlatformChild(dataDir, { LOG_LEVEL: process.env['BENCH_MCP_LOG'] ?? 'warn' })
    const { token } = platform.info
    if (token === undefined) throw new Error('platform child reported no token')
    const base = `http://127.0.0.1:${String(platform.info.port)}`
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
    const created = await fetch(`${base}/api/v1/functions`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({
        namespace: 'bench',
        name: 'noop',
        code: 'def handler(input, context):\n    return None\n',
      }),
    })
    if (created.status !== 201) throw new Error(`create function: ${String(created.status)} ${await created.text()}`)
    const cases = [
      {
        label: 'POST /functions/bench/noop/execute',
        url: `${base}/functions/bench/noop/execute`,
        headers: auth,
        body: JSON.stringify({ input: { n: 1 } }),
        check: (text: string) => text.includes('"success"'),
      },
      {
        label: 'POST /mcp tools/call fn.bench.noop',
        url: `${base}/mcp`,
        headers: { ...auth, accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'fn.bench.noop', arguments: { n: 1 } },
        }),
        check: (text: string) => text.includes('"isError":false'),
      },
    ]
    for (const c of cases) {
      const r = await fetch(c.url, { method: 'POST', headers: c.headers, body: c.body })
      const text = await r.text()
      if (r.status !== 200 || !c.check(text)) throw new Error(`POST ${c.url}: ${String(r.status)} ${text}`)
    }
    const pid = platform.pid
    const helperPids = childPids(pid)
    // one at a time, in rounds alternating the cases, so a change of the shared host's load hits both alike
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
      rows.push(
        i === 0 ? { ...row, baseline: true } : { ...row, reference: EXECUTE_ONE, p50Limit: LIMIT, limit: LIMIT },
      )
    }
    for (const [i, c] of cases.entries()) {
      process.stderr.write(`  50 connections: ${c.label}\n`)
      const m = await measure({ url: c.url, method: 'POST', headers: c.headers, body: c.body, pid, helperPids })
      rows.push({
        benchmark: NAME,
        case: `${c.label}, 50 connections`,
        ...m,
        ...(i === 0 ? {} : { reference: EXECUTE_LOAD, limit: LIMIT }),
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
    'a function as an MCP tool (POST /mcp tools/call) vs POST /functions/{ns}/{name}/execute (p50 and CPU one at a time, req/s and CPU at load)',
  run,
}
export default bench
