import { connect, nkeyAuthenticator } from '@nats-io/transport-node'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { bubblewrapDriver } from '../sandbox/drivers/bubblewrap.ts'
import { createWarmPool } from '../sandbox/pool.ts'
import { createLogger } from '../src/kernel/log.ts'
import { localNatsCredentials } from '../src/platform/nats-credentials.ts'
import { removeTempDir, startPlatformChild, tempDir, type ServerChild } from './lib/children.ts'
import { childPids } from './lib/cpu.ts'
import { committedTransactions } from './lib/pg-stats.ts'
import { measure } from './lib/load.ts'
import { pooled, sequentialRun, type SequentialRun } from './lib/sequential.ts'
import type { Benchmark, Row } from './lib/types.ts'
import { barePython, CODE, FORK_FLOOR, forkNote, GAP_MS, LIMITS, measureCalls, warmNote } from './sandbox.bench.ts'

/*
 * `POST /functions/{ns}/{name}/execute` of a no-op function end to end (gateway, job enqueue,
 * claim, worker, sandbox, result, reply) on one platform process (ROLES=all, its own nats-server
 * and Postgres), with its two floors measured in the same run:
 *   - the bare pipe: a framed JSON round trip to a warm python3 (what any warm call pays);
 *   - the warm sandbox call: `pool.run()` of the same code on a warm bubblewrap pool in this
 *     process (what the execute path adds is everything else).
 * Both floors one call at a time with a GAP_MS pause (the sandbox bench's latency rows), the
 * execute one request at a time over one kept-alive connection (rounds alternating with nothing:
 * the samples are pooled), then autocannon's 50 connections. Targets (issue 43): execute p50 ≤ 2×
 * the warm sandbox call; ≥ 400 calls/s at 50 connections; p99 ≤ 10× p50 there.
 * BENCH_EXECUTE_SAMPLES (default 300) sets the one-at-a-time samples of each row;
 * BENCH_EXECUTE_SKIP_LOAD=1 leaves out the 50 connections (a quick A/B of the one-at-a-time path).
 */
const NAME = 'execute'
const SAMPLES = Number(process.env['BENCH_EXECUTE_SAMPLES'] ?? 300)
const WARM = 'warm sandbox call (pool.run, bubblewrap, 4 sandboxes)'
const EXECUTE_ONE = 'POST /functions/bench/echo/execute, one at a time'
const log = createLogger({ level: 'warn' })
/** Calls counted for the messages and transactions per call (not timed: the counting subscription costs). */
const COUNTED = 50

/**
 * NATS messages and Postgres transactions per execute, one call at a time: every message any
 * client publishes is seen by a subscription to `>` (job publishes, JetStream API requests and
 * their replies, KV writes and their republished events, acks), grouped by subject with ids
 * masked. What the platform sends while idle (leases, heartbeats, pull requests renewed) is
 * counted over an idle stretch first and subtracted at its rate; a count, unlike this host's
 * timings, is the same on a loaded machine.
 */
async function countPerCall(
  natsUrl: string,
  natsDir: string,
  databaseUrl: string | undefined,
  call: () => Promise<void>,
): Promise<{ msgs: number; xacts: number | undefined; bySubject: string }> {
  const nc = await connect({
    servers: natsUrl,
    authenticator: nkeyAuthenticator(localNatsCredentials(natsDir).seed.platform),
  })
  const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$|^[A-Za-z0-9]{16,}$|^\d+$/
  const key = (subject: string): string =>
    subject.startsWith('_INBOX')
      ? '_INBOX'
      : subject
          .split('.')
          .map((t) => (ID.test(t) ? '*' : t))
          .slice(0, subject.startsWith('$JS.EVENT') ? 8 : 5)
          .join('.')
  try {
    let counts = new Map<string, number>()
    const sub = nc.subscribe('>', {
      callback: (_err, m) => {
        const k = key(m.subject)
        counts.set(k, (counts.get(k) ?? 0) + 1)
      },
    })
    await nc.flush()
    const IDLE_MS = 3_000
    await new Promise((r) => setTimeout(r, IDLE_MS))
    const idle = counts
    counts = new Map()
    const x0 = databaseUrl === undefined ? undefined : await committedTransactions(databaseUrl)
    const t0 = performance.now()
    for (let i = 0; i < COUNTED; i++) await call()
    // the writes that follow a reply (completion, ack, mirror) land within a moment
    await new Promise((r) => setTimeout(r, 1_500))
    await nc.flush()
    const elapsed = performance.now() - t0
    const x1 = databaseUrl === undefined ? undefined : await committedTransactions(databaseUrl)
    sub.unsubscribe()
    const net = new Map<string, number>()
    for (const [k, n] of counts) {
      const v = (n - ((idle.get(k) ?? 0) * elapsed) / IDLE_MS) / COUNTED
      if (v >= 0.05) net.set(k, v)
    }
    const total = [...net.values()].reduce((a, b) => a + b, 0)
    const bySubject = [...net.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${k} ${n.toFixed(1)}`)
      .join(', ')
    return {
      msgs: total,
      xacts: x0 === undefined || x1 === undefined ? undefined : (x1 - x0) / COUNTED,
      bySubject,
    }
  } finally {
    await nc.close()
  }
}

async function floors(): Promise<Row[]> {
  const bare = barePython()
  const rows: Row[] = []
  try {
    rows.push({
      ...(await measureCalls('bare pipe round trip to warm python3 (floor)', NAME, SAMPLES, bare.call, {
        gapMs: GAP_MS,
      })),
      baseline: true,
    })
  } finally {
    bare.stop()
  }
  const forking = barePython({ fork: true })
  try {
    rows.push(await measureCalls(FORK_FLOOR, NAME, SAMPLES, forking.call, { gapMs: GAP_MS }))
  } finally {
    forking.stop()
  }
  const driver = bubblewrapDriver({ python: '/usr/bin/python3' })
  const usable = await driver.check()
  if (!usable.ok) throw new Error(`bubblewrap sandboxes cannot run here: ${usable.reason}`)
  const pool = createWarmPool({
    name: 'bench-execute',
    driver,
    spec: (id) => ({ id, mode: 'exclusive', network: false, limits: LIMITS }),
    minSize: 4,
    maxSize: 4,
    minIdle: 4,
    maxExecutions: 1_000_000,
    healthIntervalMs: 60_000,
    idleTimeoutMs: 3_600_000,
    log,
  })
  try {
    let i = 0
    const warm = async () => {
      const r = await pool.run({ code: CODE, entrypoint: 'handler', input: ++i, context: {}, timeoutMs: 5_000 })
      if (!r.ok) throw new Error(r.error.message)
    }
    await warm()
    rows.push(await measureCalls(WARM, NAME, SAMPLES, warm, { gapMs: GAP_MS }))
    const [pipe, fork, warmRow] = rows
    if (pipe !== undefined && fork !== undefined && warmRow !== undefined) {
      fork.note = forkNote(fork, pipe)
      warmRow.note = warmNote(warmRow, pipe, fork)
    }
  } finally {
    await pool.close()
  }
  return rows
}

async function run(): Promise<Row[]> {
  process.stderr.write('  floors: bare pipe, warm sandbox call\n')
  const rows = await floors()
  const dataDir = tempDir('bench-execute-')
  let platform: ServerChild | undefined
  let perCall = ''
  try {
    process.stderr.write('  starting platform...\n')
    platform = await startPlatformChild(dataDir, { LOG_LEVEL: process.env['BENCH_EXECUTE_LOG'] ?? 'warn' })
    const { token } = platform.info
    if (token === undefined) throw new Error('platform child reported no token')
    const base = `http://127.0.0.1:${String(platform.info.port)}`
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
    const created = await fetch(`${base}/api/v1/functions`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ namespace: 'bench', name: 'echo', code: CODE }),
    })
    if (created.status !== 201) throw new Error(`create function: ${String(created.status)} ${await created.text()}`)
    const target = {
      url: `${base}/functions/bench/echo/execute`,
      method: 'POST' as const,
      headers,
      body: JSON.stringify({ input: { n: 1 } }),
      pid: platform.pid,
      helperPids: childPids(platform.pid),
    }
    const first = await fetch(target.url, { method: 'POST', headers, body: target.body })
    if (first.status !== 200) throw new Error(`execute: ${String(first.status)} ${await first.text()}`)
    process.stderr.write('  one at a time\n')
    const one: SequentialRun[] = [await sequentialRun(target, { samples: SAMPLES }, { samples: 30 })]
    rows.push({ benchmark: NAME, case: EXECUTE_ONE, ...pooled(one, target.url), reference: WARM, p50Limit: 2 })
    const counted = await countPerCall(
      String(platform.info.natsUrl),
      join(dataDir, 'nats'),
      platform.info.databaseUrl,
      async () => {
        const r = await fetch(target.url, { method: 'POST', headers, body: target.body })
        await r.arrayBuffer()
        if (r.status !== 200) throw new Error(`execute: ${String(r.status)}`)
      },
    )
    process.stderr.write(`  per call: ${counted.msgs.toFixed(1)} NATS messages (${counted.bySubject})\n`)
    perCall = `${counted.msgs.toFixed(1)} NATS messages and ${counted.xacts?.toFixed(1) ?? '?'} Postgres transactions a call`
    if (process.env['BENCH_EXECUTE_SKIP_LOAD'] !== '1') {
      process.stderr.write('  50 connections\n')
      const m = await measure(target)
      const checks = [
        `≥400/s ${m.rps >= 400 ? 'ok' : 'UNDER'}`,
        `p99 ≤10× p50 ${m.latencyP99Ms <= 10 * Math.max(m.latencyP50Ms, 1) ? 'ok' : 'OVER'}`,
      ]
      rows.push({
        benchmark: NAME,
        case: 'POST /functions/bench/echo/execute, 50 connections',
        ...m,
        reference: EXECUTE_ONE,
        checks,
        note: `p99/p50 ${(m.latencyP99Ms / Math.max(m.latencyP50Ms, 1)).toFixed(1)} (autocannon whole ms)`,
      })
    }
  } finally {
    await platform?.stop()
    removeTempDir(dataDir)
  }
  const [, , warm, exec, load] = rows
  if (warm !== undefined && exec !== undefined)
    exec.note = `p50 ${(exec.latencyP50Ms / warm.latencyP50Ms).toFixed(2)}× the warm sandbox call (target ≤ 2×); ${perCall}`
  if (exec !== undefined && load !== undefined) {
    // What the host can do at most: its cores over the CPU one call takes in every process (the
    // platform, the sandboxes' children, nats-server and Postgres), measured one at a time above.
    const perCallUs = exec.cpuUsPerReq + (exec.otherCpuUsPerReq ?? 0)
    const ceiling = (availableParallelism() * 1e6) / Math.max(1, perCallUs)
    load.note = `${load.note ?? ''}; CPU ceiling ${ceiling.toFixed(0)} calls/s (${String(availableParallelism())} CPUs / ${(perCallUs / 1000).toFixed(1)} ms CPU a call, one at a time)`
  }
  return rows
}

const bench: Benchmark = {
  name: NAME,
  description:
    'POST /functions/{ns}/{name}/execute of a no-op end to end vs a warm sandbox call and the bare pipe (p50 one at a time; calls/s and p99 at 50 connections)',
  run,
}
export default bench
