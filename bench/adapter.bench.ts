import { spawn, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { removeTempDir, startPlatformChild, tempDir, type ServerChild } from './lib/children.ts'
import { childPids, processTicks, ticksBetween, ticksToMicros, treeTicks } from './lib/cpu.ts'
import { CONNECTIONS, PIPELINING, loadSettings } from './lib/load.ts'
import type { Benchmark, Row } from './lib/types.ts'

/*
 * The OpenAI adapter (src/adapter/) against @portkey-ai/gateway, both in front of the same fake LLM
 * provider (tests/helpers/fake-llm.ts --zero-latency, a process of its own), in one run:
 *
 *   fake direct   the bench talks to the fake itself: the latency floor
 *   portkey       `node node_modules/@portkey-ai/gateway/build/start-server.js` (provider openai,
 *                 x-portkey-custom-host = the fake), no auth, no logging backend
 *   ours          the platform (ROLES=all, own nats-server and Postgres) with an llm_provider
 *                 pointing at the fake, model `fake/fake-model`, a superadmin JWT: authentication,
 *                 permission check, gateway → NATS → service → provider, SSE through the stream
 *
 * Benchmarks (Row.benchmark; each compares with Portkey as its baseline):
 *   adapter / adapter-stream       load: autocannon, CONNECTIONS connections, POST non-stream /
 *                                  stream; CPU µs/req of the process under test (ours: the platform
 *                                  process; "other": its nats-server and Postgres)
 *   adapter-seq / adapter-seq-stream  one request at a time (BENCH_ADAPTER_REQUESTS, default 1000
 *                                  per target, the targets taking turns): p50 / p99 of the whole
 *                                  exchange, req/s = 1 / mean latency; the note gives the latency
 *                                  added over the fake direct
 *   adapter-ttft                   one streamed request at a time: p50 / p99 time to the first
 *                                  content token
 * Plus agent:default/default (a whole agent turn: chat, actor, job, worker) for reference, which
 * Portkey has no equivalent of.
 *
 * Portkey's stream path needs @hono/node-server ≤ 1.14.1 (later versions make it fail with
 * `TypeError: immutable`, Portkey-AI/gateway#1389); package.json pins it with `overrides`.
 */
const MESSAGES = [{ role: 'user', content: 'Say hello.' }]
const FIRST_CONTENT = /"content":"[^"]/

const envNum = (name: string, fallback: number): number => {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got ${raw}`)
  return n
}
const err = (s: string) => process.stderr.write(`  ${s}\n`)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

// ---------------------------------------------------------------------------------------------
// Children that are not bench/servers scripts (the fake, Portkey)

const own = new Set<ChildProcess>()
process.on('exit', () => {
  for (const c of own) if (c.exitCode === null) c.kill('SIGKILL')
})

async function freePort(): Promise<number> {
  const srv = createServer()
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))
  const port = (srv.address() as { port: number }).port
  await new Promise<void>((resolve) => srv.close(() => resolve()))
  return port
}

interface Proc {
  pid: number
  stop(): Promise<void>
}

function spawnProc(
  name: string,
  args: string[],
  ready: (line: string) => boolean,
  env: Record<string, string> = {},
): Promise<Proc> {
  const root = join(import.meta.dirname, '..')
  const child = spawn(process.execPath, args, {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  })
  own.add(child)
  const tail: string[] = []
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM')
      await Promise.race([new Promise((r) => child.once('exit', r)), sleep(5_000)])
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    }
    own.delete(child)
  }
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => void stop().then(() => reject(new Error(`${name} not ready in 60 s:\n${tail.join('\n')}`))),
      60_000,
    )
    const onLine = (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split(/[\r\n]+/)) {
        if (line.trim() === '') continue
        tail.push(line)
        if (tail.length > 30) tail.shift()
        if (ready(line) && child.pid !== undefined) {
          clearTimeout(timer)
          resolve({ pid: child.pid, stop })
        }
      }
    }
    child.stdout.on('data', onLine)
    child.stderr.on('data', onLine)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`${name} exited (${String(code)}):\n${tail.join('\n')}`))
    })
  })
}

// ---------------------------------------------------------------------------------------------
// Measurements

interface Target {
  url: string
  headers: Record<string, string>
  model: string
  pid: number
  helperPids?: number[]
}

const bodyOf = (t: Target, stream: boolean) =>
  JSON.stringify({ model: t.model, messages: MESSAGES, ...(stream ? { stream: true } : {}) })

function cpuSampler(t: Target) {
  const helpers = t.helperPids ?? []
  const before = processTicks(t.pid)
  const helpersBefore = helpers.length > 0 ? treeTicks(helpers) : undefined
  return (requests: number) => ({
    cpuUsPerReq: ticksToMicros(processTicks(t.pid) - before) / requests,
    otherCpuUsPerReq:
      helpersBefore === undefined
        ? undefined
        : ticksToMicros(ticksBetween(helpersBefore, treeTicks(helpers))) / requests,
  })
}

/** One exchange; throws on a non-200 or a body without content. Times in ms. */
async function once(t: Target, stream: boolean): Promise<{ totalMs: number; ttftMs: number }> {
  const t0 = performance.now()
  const res = await fetch(t.url, {
    method: 'POST',
    headers: { ...t.headers, 'content-type': 'application/json' },
    body: bodyOf(t, stream),
  })
  if (res.status !== 200 || res.body === null)
    throw new Error(`${t.url} answered ${String(res.status)}: ${(await res.text()).slice(0, 300)}`)
  const decoder = new TextDecoder()
  let text = ''
  let ttft = -1
  for await (const chunk of res.body) {
    text += decoder.decode(chunk as Uint8Array, { stream: true })
    if (ttft < 0 && FIRST_CONTENT.test(text)) ttft = performance.now() - t0
  }
  const total = performance.now() - t0
  if (ttft < 0) throw new Error(`${t.url}: no content in ${text.slice(0, 300)}`)
  if (stream && !text.includes('data: [DONE]'))
    throw new Error(`${t.url}: the stream did not end with [DONE]: ${text.slice(-300)}`)
  return { totalMs: total, ttftMs: ttft }
}

const pct = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0

interface Seq {
  row: Omit<Row, 'benchmark' | 'case'>
  ttft: { p50: number; p99: number }
}

/**
 * `n` exchanges with each target, one request at a time, the targets taking turns (so a noisy
 * neighbour on the machine hits them alike); `n / 10` rounds are thrown away first.
 */
async function sequential(targets: Target[], stream: boolean, n: number): Promise<Seq[]> {
  for (let i = 0; i < Math.max(20, Math.floor(n / 10)); i++) for (const t of targets) await once(t, stream)
  const totals = targets.map(() => [] as number[])
  const ttfts = targets.map(() => [] as number[])
  const elapsed = targets.map(() => 0)
  const cpus = targets.map(cpuSampler)
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < targets.length; k++) {
      const r = await once(targets[k] as Target, stream)
      totals[k]?.push(r.totalMs)
      ttfts[k]?.push(r.ttftMs)
      elapsed[k] = (elapsed[k] ?? 0) + r.totalMs
    }
  }
  return targets.map((_t, k) => {
    const c = (cpus[k] as ReturnType<typeof cpuSampler>)(n)
    const tot = (totals[k] as number[]).sort((a, b) => a - b)
    const tt = (ttfts[k] as number[]).sort((a, b) => a - b)
    const durationS = (elapsed[k] ?? 0) / 1000
    return {
      row: {
        requests: n,
        durationS,
        rps: n / durationS,
        cpuUsPerReq: c.cpuUsPerReq,
        ...(c.otherCpuUsPerReq === undefined ? {} : { otherCpuUsPerReq: c.otherCpuUsPerReq }),
        latencyP50Ms: pct(tot, 50),
        latencyP99Ms: pct(tot, 99),
        errors: 0,
      },
      ttft: { p50: pct(tt, 50), p99: pct(tt, 99) },
    }
  })
}

/** autocannon POSTs with CONNECTIONS connections, like lib/load.ts measure() does for GETs. */
async function load(t: Target, stream: boolean): Promise<Omit<Row, 'benchmark' | 'case'>> {
  const { durationS, warmupS } = loadSettings()
  const options = {
    url: t.url,
    method: 'POST',
    headers: { ...t.headers, 'content-type': 'application/json' },
    body: bodyOf(t, stream),
    connections: CONNECTIONS,
    pipelining: PIPELINING,
  }
  await autocannon({ ...options, duration: warmupS } as autocannon.Options)
  const cpu = cpuSampler(t)
  const result = await autocannon({ ...options, duration: durationS } as autocannon.Options)
  const requests = result.requests.total
  const c = cpu(Math.max(1, requests))
  await sleep(1_000)
  if (requests === 0) throw new Error(`no request to ${t.url} completed (errors ${String(result.errors)})`)
  return {
    requests,
    durationS: result.duration,
    rps: requests / result.duration,
    cpuUsPerReq: c.cpuUsPerReq,
    ...(c.otherCpuUsPerReq === undefined ? {} : { otherCpuUsPerReq: c.otherCpuUsPerReq }),
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
  }
}

// ---------------------------------------------------------------------------------------------

async function run(): Promise<Row[]> {
  const rows: Row[] = []
  const procs: Proc[] = []
  const children: ServerChild[] = []
  const dataDir = tempDir('bench-adapter-')
  const n = envNum('BENCH_ADAPTER_REQUESTS', 1000)
  const ms = (x: number) => `${x.toFixed(2)} ms`
  try {
    err('starting the fake LLM (--zero-latency)...')
    let fakeUrl = ''
    const fake = await spawnProc(
      'fake-llm',
      ['--import', 'tsx', 'tests/helpers/fake-llm.ts', '--port', '0', '--zero-latency'],
      (line) => {
        if (!line.startsWith('{')) return false
        fakeUrl = (JSON.parse(line) as { url: string }).url
        return true
      },
    )
    procs.push(fake)

    err('starting @portkey-ai/gateway...')
    const pkPort = await freePort()
    const portkey = await spawnProc(
      'portkey',
      [
        join('node_modules', '@portkey-ai', 'gateway', 'build', 'start-server.js'),
        `--port=${String(pkPort)}`,
        '--headless',
      ],
      (line) => line.includes('Ready for connections'),
      { NODE_ENV: 'production' },
    )
    procs.push(portkey)

    err('starting the platform...')
    const platform = await startPlatformChild(dataDir)
    children.push(platform)
    const base = `http://127.0.0.1:${String(platform.info.port)}`
    const auth = { authorization: `Bearer ${platform.info.token ?? ''}` }
    const made = await fetch(`${base}/api/v1/llm-providers`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'fake',
        provider_type: 'openai',
        api_endpoint: `${fakeUrl}/v1`,
        api_key: 'sk-fake',
        default_model: 'fake-model',
        is_default: true,
      }),
    })
    if (made.status !== 201) throw new Error(`creating the provider: ${String(made.status)} ${await made.text()}`)

    const direct: Target = {
      url: `${fakeUrl}/v1/chat/completions`,
      headers: { authorization: 'Bearer sk-fake' },
      model: 'fake-model',
      pid: fake.pid,
    }
    const pk: Target = {
      url: `http://127.0.0.1:${String(pkPort)}/v1/chat/completions`,
      headers: {
        authorization: 'Bearer sk-fake',
        'x-portkey-provider': 'openai',
        'x-portkey-custom-host': `${fakeUrl}/v1`,
      },
      model: 'fake-model',
      pid: portkey.pid,
    }
    const ours: Target = {
      url: `${base}/adapters/openai/v1/chat/completions`,
      headers: auth,
      model: 'fake/fake-model',
      pid: platform.pid,
      helperPids: childPids(platform.pid),
    }
    const agent: Target = { ...ours, model: 'agent:default/default' }

    // sequential: added latency and time to first token
    for (const stream of [false, true]) {
      const bench = stream ? 'adapter-seq-stream' : 'adapter-seq'
      const mode = stream ? 'stream' : 'non-stream'
      err(
        `sequential ${mode}: fake direct, portkey, ours taking turns (${String(n)} requests each), then agent:default/default`,
      )
      const [d, p, o] = (await sequential([direct, pk, ours], stream, n)) as [Seq, Seq, Seq]
      const [a] = (await sequential([agent], stream, Math.max(50, Math.floor(n / 5)))) as [Seq]
      const added = (x: Seq) => `adds ${ms(x.row.latencyP50Ms - d.row.latencyP50Ms)} at p50 over the fake direct`
      // the fake answered the upstream calls of all three targets during the loop
      rows.push({
        benchmark: bench,
        case: `fake direct, ${mode}, 1 at a time`,
        ...d.row,
        cpuUsPerReq: d.row.cpuUsPerReq / 3,
        note: "the latency floor; CPU is the fake's per call it answered",
      })
      rows.push({
        benchmark: bench,
        case: `portkey ${mode}, 1 at a time`,
        ...p.row,
        baseline: true,
        note: `${added(p)}${stream ? "; Portkey's stream transform sleeps 25 ms before the first chunk (setTimeout in its build)" : ''}`,
      })
      rows.push({
        benchmark: bench,
        case: `ours fake/fake-model ${mode}, 1 at a time`,
        ...o.row,
        note: `${added(o)}; p50 ${(o.row.latencyP50Ms / p.row.latencyP50Ms).toFixed(2)}× Portkey's; CPU includes the platform's idle background work while the other targets ran; other = nats-server + Postgres`,
      })
      rows.push({
        benchmark: bench,
        case: `ours agent:default/default ${mode}, 1 at a time`,
        ...a.row,
        note: `a whole agent turn (internal chat in Postgres, chat actor, agent job, worker): ${added(a)}`,
      })
      if (stream) {
        const ttftRow = (s: Seq): Omit<Row, 'benchmark' | 'case'> => ({
          ...s.row,
          latencyP50Ms: s.ttft.p50,
          latencyP99Ms: s.ttft.p99,
        })
        rows.push({
          benchmark: 'adapter-ttft',
          case: 'fake direct, time to first token',
          ...ttftRow(d),
          cpuUsPerReq: d.row.cpuUsPerReq / 3,
        })
        rows.push({
          benchmark: 'adapter-ttft',
          case: 'portkey, time to first token',
          ...ttftRow(p),
          baseline: true,
          note: `adds ${ms(p.ttft.p50 - d.ttft.p50)} (p50) to the first token`,
        })
        rows.push({
          benchmark: 'adapter-ttft',
          case: 'ours fake/fake-model, time to first token',
          ...ttftRow(o),
          note: `adds ${ms(o.ttft.p50 - d.ttft.p50)} (p50) to the first token; ${(o.ttft.p50 / p.ttft.p50).toFixed(2)}× Portkey's`,
        })
        rows.push({ benchmark: 'adapter-ttft', case: 'ours agent:default/default, time to first token', ...ttftRow(a) })
      }
    }

    // under load: throughput and CPU per request
    for (const stream of [false, true]) {
      const bench = stream ? 'adapter-stream' : 'adapter'
      const mode = stream ? 'stream' : 'non-stream'
      err(`load ${mode}: portkey, ours`)
      const p = await load(pk, stream)
      rows.push({ benchmark: bench, case: `portkey ${mode}, ${String(CONNECTIONS)} connections`, ...p, baseline: true })
      const o = await load(ours, stream)
      rows.push({
        benchmark: bench,
        case: `ours fake/fake-model ${mode}, ${String(CONNECTIONS)} connections`,
        ...o,
        note: `CPU is the platform process (gateway, service, idle workers and actors); other = its nats-server and Postgres; ${(o.rps / p.rps).toFixed(2)}× Portkey's req/s`,
      })
    }
  } finally {
    for (const c of children.reverse()) await c.stop()
    for (const p of procs.reverse()) await p.stop()
    removeTempDir(dataDir)
  }
  return rows
}

const bench: Benchmark = {
  name: 'adapter',
  description:
    'OpenAI adapter vs @portkey-ai/gateway on the same zero-latency fake LLM: added latency, time to first token, CPU per request, non-stream and stream',
  run,
}
export default bench
