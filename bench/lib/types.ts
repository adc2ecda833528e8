/** One measured case. `run.ts` adds the ratio against the row marked `baseline` of the same benchmark. */
export interface Row {
  benchmark: string
  case: string
  /** The row the others of this benchmark are compared with. */
  baseline?: boolean
  /** Largest acceptable CPU-per-request ratio against the baseline (the table says ok / OVER). */
  limit?: number
  /** The `case` of the row (same benchmark) this row's ratios are against, instead of the baseline row. */
  reference?: string
  /** Ratios on CPU µs/req of every process (CPU + other, for this row and its reference), not the one under test. */
  totalCpu?: boolean
  /** Smallest acceptable req/s ratio against the baseline / reference (the table says ok / UNDER). */
  rpsLimit?: number
  /** Largest acceptable p50 latency ratio against the baseline / reference (the table says ok / OVER). */
  p50Limit?: number
  /** Absolute targets the benchmark checked itself (e.g. `p99 late ≤1000 ms ok`), shown in the target column as given. */
  checks?: string[]
  requests: number
  durationS: number
  rps: number
  /** CPU time of the process under test (utime + stime from /proc) divided by completed requests. */
  cpuUsPerReq: number
  /** CPU of the helper processes (nats-server, Postgres, a separate service process) per request. */
  otherCpuUsPerReq?: number
  latencyP50Ms: number
  latencyP99Ms: number
  /** Socket errors + timeouts + non-2xx responses. */
  errors: number
  note?: string
}

export interface Benchmark {
  name: string
  description: string
  /**
   * Starts its own nats-server (startNats, or the platform's single-node mode): the runner can run
   * it once per chosen server (`--nats=both`), its rows labelled with the server's version.
   */
  nats?: boolean
  run(): Promise<Row[]>
}
