/*
 * The part of autocannon's programmatic API the benches use (autocannon ships no types and
 * @types/autocannon is not a dependency). Latencies are in milliseconds.
 */
declare module 'autocannon' {
  interface Options {
    url: string
    connections?: number
    pipelining?: number
    duration?: number
    headers?: Record<string, string>
    method?: string
    body?: string
    timeout?: number
  }
  interface Histogram {
    average: number
    mean: number
    stddev: number
    min: number
    max: number
    total: number
    p50: number
    p90: number
    p99: number
  }
  interface Result {
    duration: number
    errors: number
    timeouts: number
    non2xx: number
    latency: Histogram
    requests: Histogram & { sent: number }
    throughput: Histogram
    statusCodeStats: Record<string, { count: number }>
  }
  function autocannon(options: Options): Promise<Result>
  namespace autocannon {
    export type { Options, Result, Histogram }
  }
  export default autocannon
}
