import { clockTicks, processTicks } from './cpu.ts'
import type { Measurement } from './load.ts'

/*
 * Latency one request at a time: the next request leaves when the previous answer is read, so
 * every sample is the server's own path with no queue in front of it (autocannon's 50 connections
 * measure the queue too). CPU of the process under test is sampled around the measured samples.
 */
export interface SequentialTarget {
  url: string
  method: string
  headers: Record<string, string>
  body?: string
  pid: number
  /** Requests measured (after `warmup` unmeasured ones). */
  samples: number
  warmup?: number
}

export const percentile = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0

/** The measurement, plus every sample's latency (ms, sorted) so rounds can be pooled. */
export async function sequential(t: SequentialTarget): Promise<Measurement & { latenciesMs: number[]; cpuUs: number }> {
  const once = async (): Promise<boolean> => {
    const res = await fetch(t.url, { method: t.method, headers: t.headers, ...(t.body === undefined ? {} : { body: t.body }) })
    await res.arrayBuffer()
    return res.status >= 200 && res.status < 300
  }
  for (let i = 0; i < (t.warmup ?? Math.ceil(t.samples / 10)); i++) await once()
  const lat: number[] = []
  let errors = 0
  const ticks0 = processTicks(t.pid)
  const t0 = performance.now()
  for (let i = 0; i < t.samples; i++) {
    const s = performance.now()
    if (!(await once())) errors++
    lat.push(performance.now() - s)
  }
  const durationS = (performance.now() - t0) / 1000
  const cpuUs = ((processTicks(t.pid) - ticks0) / clockTicks()) * 1e6
  lat.sort((a, b) => a - b)
  return {
    requests: t.samples,
    durationS,
    rps: t.samples / durationS,
    cpuUsPerReq: cpuUs / t.samples,
    otherCpuUsPerReq: undefined,
    latencyP50Ms: percentile(lat, 50),
    latencyP99Ms: percentile(lat, 99),
    errors,
    latenciesMs: lat,
    cpuUs,
  }
}

/** Rounds of the same case pooled: percentiles over all their samples, CPU and time summed. */
export function pooled(rounds: readonly (Measurement & { latenciesMs: number[]; cpuUs: number })[]): Measurement {
  const lat = rounds.flatMap((r) => r.latenciesMs).sort((a, b) => a - b)
  const durationS = rounds.reduce((s, r) => s + r.durationS, 0)
  const cpuUs = rounds.reduce((s, r) => s + r.cpuUs, 0)
  return {
    requests: lat.length,
    durationS,
    rps: lat.length / durationS,
    cpuUsPerReq: cpuUs / lat.length,
    otherCpuUsPerReq: undefined,
    latencyP50Ms: percentile(lat, 50),
    latencyP99Ms: percentile(lat, 99),
    errors: rounds.reduce((s, r) => s + r.errors, 0),
  }
}
