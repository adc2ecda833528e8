import http from 'node:http'
import { helperTicks as sampleHelpers, processTicks, ticksBetween, ticksToMicros } from './cpu.ts'
import { loadSettings, type LoadTarget, type Measurement } from './load.ts'

/*
 * Latency one request at a time over one kept-alive connection (node:http, not autocannon): the
 * next request leaves when the previous answer is read, so every sample is the server's own path
 * with no queue in front of it (autocannon's 50 connections measure the queue too), with
 * sub-millisecond percentiles (autocannon reports whole milliseconds). CPU of the process under
 * test (and of its helpers) is sampled around the measured samples.
 */

/** The value at quantile q (0..1) of ascending `sorted` (nearest rank). */
export const quantile = (sorted: readonly number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? 0

/** One measured stretch: every successful sample's latency (ms, ascending), so stretches can be pooled. */
export interface SequentialRun {
  latenciesMs: number[]
  errors: number
  durationS: number
  cpuTicks: number
  helperTicks: number | undefined
}

/** How long a stretch lasts: a number of requests, or seconds. */
type Span = { samples: number } | { seconds: number }

async function runSpan(once: () => Promise<number>, span: Span, samples: number[]): Promise<number> {
  let errors = 0
  const end = 'seconds' in span ? performance.now() + span.seconds * 1000 : Infinity
  for (let i = 0; 'samples' in span ? i < span.samples : performance.now() < end; i++) {
    const t0 = performance.now()
    const status = await once().catch(() => 0)
    if (status < 200 || status >= 300) errors++
    else samples.push(performance.now() - t0)
  }
  return errors
}

/** A warm-up that is thrown away, then the measured stretch. */
export async function sequentialRun(target: LoadTarget, measured: Span, warmup: Span): Promise<SequentialRun> {
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
  try {
    await runSpan(once, warmup, [])
    const helpers = target.helperPids ?? []
    const helpersBefore = helpers.length > 0 ? sampleHelpers(target.pid, helpers) : undefined
    const before = processTicks(target.pid)
    const latenciesMs: number[] = []
    const started = performance.now()
    const errors = await runSpan(once, measured, latenciesMs)
    const durationS = (performance.now() - started) / 1000
    const cpuTicks = processTicks(target.pid) - before
    const helperTicks =
      helpersBefore === undefined ? undefined : ticksBetween(helpersBefore, sampleHelpers(target.pid, helpers))
    latenciesMs.sort((a, b) => a - b)
    return { latenciesMs, errors, durationS, cpuTicks, helperTicks }
  } finally {
    agent.destroy()
  }
}

/** Stretches of the same case pooled: percentiles over all their samples, CPU and time summed. */
export function pooled(runs: readonly SequentialRun[], url = 'the target'): Measurement {
  const lat = runs.flatMap((r) => r.latenciesMs).sort((a, b) => a - b)
  const errors = runs.reduce((s, r) => s + r.errors, 0)
  if (lat.length === 0) throw new Error(`no request to ${url} succeeded (errors ${String(errors)})`)
  const durationS = runs.reduce((s, r) => s + r.durationS, 0)
  const helpers = runs.every((r) => r.helperTicks !== undefined)
    ? runs.reduce((s, r) => s + (r.helperTicks ?? 0), 0)
    : undefined
  return {
    requests: lat.length,
    durationS,
    rps: lat.length / durationS,
    cpuUsPerReq: ticksToMicros(runs.reduce((s, r) => s + r.cpuTicks, 0)) / lat.length,
    otherCpuUsPerReq: helpers === undefined ? undefined : ticksToMicros(helpers) / lat.length,
    latencyP50Ms: quantile(lat, 0.5),
    latencyP99Ms: quantile(lat, 0.99),
    errors,
  }
}

/** One case for the same warm-up and duration as `measure` (BENCH_WARMUP, BENCH_DURATION). */
export async function measureSequential(target: LoadTarget): Promise<Measurement> {
  const { durationS, warmupS } = loadSettings()
  return pooled([await sequentialRun(target, { seconds: durationS }, { seconds: warmupS })], target.url)
}
