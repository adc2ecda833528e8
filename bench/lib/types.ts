/** One measured case. `run.ts` adds the ratio against the row marked `baseline` of the same benchmark. */
export interface Row {
  benchmark: string
  case: string
  /** The row the others of this benchmark are compared with. */
  baseline?: boolean
  /** Largest acceptable CPU-per-request ratio against the baseline (the table says ok / OVER). */
  limit?: number
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
  run(): Promise<Row[]>
}
