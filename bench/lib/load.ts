import autocannon from 'autocannon'
import { helperTicks as sampleHelpers, processTicks, ticksBetween, ticksToMicros } from './cpu.ts'

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
  /**
   * Helper processes (with their descendants) whose CPU is reported separately; when there are
   * any, the target's children at each sample (and what it reaped) count as helpers too.
   */
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
  autocannon({
    url: t.url,
    headers: t.headers,
    connections: CONNECTIONS,
    pipelining: PIPELINING,
    duration,
    ...(t.method === undefined ? {} : { method: t.method }),
    ...(t.body === undefined ? {} : { body: t.body }),
  })

export async function measure(target: LoadTarget): Promise<Measurement> {
  const { durationS, warmupS } = loadSettings()
  await fire(target, warmupS)
  const helpers = target.helperPids ?? []
  const helpersBefore = helpers.length > 0 ? sampleHelpers(target.pid, helpers) : undefined
  const before = processTicks(target.pid)
  const result = await fire(target, durationS)
  const after = processTicks(target.pid)
  const helperTicks =
    helpersBefore === undefined ? undefined : ticksBetween(helpersBefore, sampleHelpers(target.pid, helpers))
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

/** One request before the load, so a wrong status fails the case with its body instead of a table of errors. Returns the body. */
export async function expectOk(url: string, headers: Record<string, string> = {}): Promise<string> {
  const res = await fetch(url, { headers })
  const body = await res.text()
  if (res.status !== 200) throw new Error(`GET ${url} answered ${String(res.status)}: ${body.slice(0, 300)}`)
  return body
}
