import http from 'node:http'
import autocannon from 'autocannon'
import { processTicks, ticksBetween, ticksToMicros, treeTicks } from './cpu.ts'

/*
 * One load run with autocannon in this (the bench) process: a warm-up that is thrown away, then the
 * measured run, with the CPU time of the process under test (and of its helper processes) sampled
 * from /proc just before and just after.
 */
export const CONNECTIONS = 50
export const PIPELINING = 1

function seconds(name: string, fallback: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number of seconds, got ${raw}`)
  return n
}

/** BENCH_DURATION (default 6 s) per measured case, BENCH_WARMUP (default 2 s) before it. */
export const loadSettings = () => ({ durationS: seconds('BENCH_DURATION', 6), warmupS: seconds('BENCH_WARMUP', 2) })

export interface LoadTarget {
  url: string
  headers?: Record<string, string>
  /** Default GET; with `body` (sent as is, set the content-type in `headers`). */
  method?: string
  body?: string
  /** The process whose CPU per request is reported. */
  pid: number
  /** Helper processes (with their descendants) whose CPU is reported separately. */
  helperPids?: number[]
}

export interface Measurement {
  requests: number
  durationS: number
  rps: number
  cpuUsPerReq: number
  otherCpuUsPerReq: number | undefined
  latencyP50Ms: number
  latencyP99Ms: number
  errors: number
}

const fire = (t: LoadTarget, duration: number) =>
  autocannon({ url: t.url, headers: t.headers, connections: CONNECTIONS, pipelining: PIPELINING, duration, ...(t.method === undefined ? {} : { method: t.method }), ...(t.body === undefined ? {} : { body: t.body }) })

export async function measure(target: LoadTarget): Promise<Measurement> {
  const { durationS, warmupS } = loadSettings()
  await fire(target, warmupS)
  const helpers = target.helperPids ?? []
  const helpersBefore = helpers.length > 0 ? treeTicks(helpers) : undefined
  const before = processTicks(target.pid)
  const result = await fire(target, durationS)
  const after = processTicks(target.pid)
  const helperTicks = helpersBefore === undefined ? undefined : ticksBetween(helpersBefore, treeTicks(helpers))
  // Let the requests still in flight when autocannon stopped finish before the next step.
  await new Promise((r) => setTimeout(r, 1_000))
  const requests = result.requests.total
  if (requests === 0) throw new Error(`no request to ${target.url} completed (errors ${String(result.errors)})`)
  return {
    requests,
    durationS: result.duration,
    rps: requests / result.duration,
    cpuUsPerReq: ticksToMicros(after - before) / requests,
    otherCpuUsPerReq: helperTicks === undefined ? undefined : ticksToMicros(helperTicks) / requests,
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
  }
}

/** The value at quantile q (0..1) of ascending `sorted` (nearest rank). */
const quantile = (sorted: readonly number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? 0

/**
 * One request at a time over one kept-alive connection (node:http, not autocannon): the latency a
 * single caller sees, unhidden by queueing behind 49 other connections, with sub-millisecond
 * percentiles (autocannon reports whole milliseconds). The same warm-up and duration as `measure`.
 */
export async function measureSequential(target: LoadTarget): Promise<Measurement> {
  const { durationS, warmupS } = loadSettings()
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const url = new URL(target.url)
  const body = target.body === undefined ? undefined : Buffer.from(target.body)
  const headers = { ...target.headers, ...(body === undefined ? {} : { 'content-length': String(body.length) }) }
  const once = () =>
    new Promise<number>((resolve, reject) => {
      const req = http.request(url, { method: target.method ?? 'GET', headers, agent }, (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
        res.on('error', reject)
      })
      req.on('error', reject)
      req.end(body)
    })
  const loop = async (seconds: number, samples: number[]): Promise<number> => {
    let errors = 0
    const end = performance.now() + seconds * 1000
    while (performance.now() < end) {
      const t0 = performance.now()
      const status = await once().catch(() => 0)
      if (status < 200 || status >= 300) errors++
      else samples.push(performance.now() - t0)
    }
    return errors
  }
  try {
    await loop(warmupS, [])
    const helpers = target.helperPids ?? []
    const helpersBefore = helpers.length > 0 ? treeTicks(helpers) : undefined
    const before = processTicks(target.pid)
    const samples: number[] = []
    const started = performance.now()
    const errors = await loop(durationS, samples)
    const elapsed = (performance.now() - started) / 1000
    const after = processTicks(target.pid)
    const helperTicks = helpersBefore === undefined ? undefined : ticksBetween(helpersBefore, treeTicks(helpers))
    const requests = samples.length
    if (requests === 0) throw new Error(`no request to ${target.url} succeeded (errors ${String(errors)})`)
    samples.sort((a, b) => a - b)
    return {
      requests,
      durationS: elapsed,
      rps: requests / elapsed,
      cpuUsPerReq: ticksToMicros(after - before) / requests,
      otherCpuUsPerReq: helperTicks === undefined ? undefined : ticksToMicros(helperTicks) / requests,
      latencyP50Ms: quantile(samples, 0.5),
      latencyP99Ms: quantile(samples, 0.99),
      errors,
    }
  } finally {
    agent.destroy()
  }
}

/** One request before the load, so a wrong status fails the case with its body instead of a table of errors. Returns the body. */
export async function expectOk(url: string, headers: Record<string, string> = {}): Promise<string> {
  const res = await fetch(url, { headers })
  const body = await res.text()
  if (res.status !== 200) throw new Error(`GET ${url} answered ${String(res.status)}: ${body.slice(0, 300)}`)
  return body
}
