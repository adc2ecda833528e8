import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openChannel } from '../sandbox/channel.ts'
import type { SandboxDriver, SandboxLimits } from '../sandbox/driver.ts'
import { bubblewrapDriver } from '../sandbox/drivers/bubblewrap.ts'
import { dockerDriver } from '../sandbox/drivers/docker.ts'
import { createWarmPool } from '../sandbox/pool.ts'
import { createLogger } from '../src/kernel/log.ts'
import { ensurePodman, startPodmanService } from '../tests/helpers/podman.ts'
import { clockTicks, processTicks } from './lib/cpu.ts'
import type { Benchmark, Row } from './lib/types.ts'

/*
 * The docker driver against a real Docker Engine API (`podman system service`, started like the
 * tests do: tests/helpers/podman.ts), next to the bubblewrap driver on the same machine:
 *   sandbox-docker-cold  a single-use bubblewrap execution (baseline) vs a container from create
 *                        to the runner's ready frame, and a single-use container execution
 *                        (create, start, ready, one call, remove);
 *   sandbox-docker-warm  a call through a warm bubblewrap pool (baseline) vs the same through a
 *                        warm pool of containers (the framed protocol over the attach stream).
 * Latency is per call with one call in flight; warm throughput runs `CONCURRENCY` callers. CPU is
 * this process's only (the engine, conmon and runc are other processes, not counted).
 */
const SAMPLES = Number(process.env['BENCH_SANDBOX_SAMPLES'] ?? 1000)
const COLD_SAMPLES = Number(process.env['BENCH_SANDBOX_DOCKER_COLD_SAMPLES'] ?? 30)
const CONCURRENCY = 4
const LIMITS: SandboxLimits = { memoryMb: 512, cpus: 1, tmpMb: 100, fileMb: 1024, maxProcs: 64, maxFiles: 256 }
const log = createLogger({ level: 'warn' })
const CODE = 'def handler(input, context):\n    return {"echo": input}\n'

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0
}

/** `call` may return its own latency (ms) to leave its cleanup out of the measure. */
async function measure(
  label: string,
  benchmark: string,
  samples: number,
  call: () => Promise<number | void>,
  o: { baseline?: boolean; concurrency?: number } = {},
): Promise<Row> {
  for (let i = 0; i < Math.min(20, samples / 10); i++) await call()
  const lat: number[] = []
  const ticks0 = processTicks(process.pid)
  const t0 = performance.now()
  for (let i = 0; i < samples; i++) {
    const s = performance.now()
    const own = await call()
    lat.push(typeof own === 'number' ? own : performance.now() - s)
  }
  const seqS = (performance.now() - t0) / 1000
  const cpuUs = (((processTicks(process.pid) - ticks0) / clockTicks()) * 1e6) / samples
  let rps = samples / seqS
  if ((o.concurrency ?? 1) > 1) {
    const t1 = performance.now()
    let left = samples
    await Promise.all(
      Array.from({ length: o.concurrency ?? 1 }, async () => {
        while (left-- > 0) await call()
      }),
    )
    rps = samples / ((performance.now() - t1) / 1000)
  }
  return {
    benchmark,
    case: label,
    ...(o.baseline === true ? { baseline: true } : {}),
    requests: samples,
    durationS: seqS,
    rps,
    cpuUsPerReq: cpuUs,
    latencyP50Ms: pct(lat, 50),
    latencyP99Ms: pct(lat, 99),
    errors: 0,
  }
}

/** One sandbox per call; with `call: false`, returns the time from start to the ready frame only. */
function singleUse(driver: SandboxDriver, prefix: string, o: { call: boolean }): () => Promise<number | void> {
  let k = 0
  return async () => {
    const t0 = performance.now()
    const sb = await driver.start({ id: `${prefix}${String(++k)}`, mode: 'exclusive', network: false, limits: LIMITS })
    try {
      const ch = openChannel(sb)
      await ch.ready
      if (!o.call) return performance.now() - t0
      const r = await ch.exec({ code: CODE, entrypoint: 'handler', input: k, context: {}, timeoutMs: 5_000 })
      if (!r.ok) throw new Error(r.error.message)
      return undefined
    } finally {
      await sb.destroy()
    }
  }
}

async function warmPoolCase(driver: SandboxDriver, label: string, o: { baseline?: boolean } = {}): Promise<Row> {
  const pool = createWarmPool({
    name: 'bench',
    driver,
    spec: (id) => ({ id, mode: 'exclusive', network: false, limits: LIMITS }),
    minSize: CONCURRENCY,
    maxSize: CONCURRENCY,
    minIdle: CONCURRENCY,
    maxExecutions: 1_000_000,
    healthIntervalMs: 60_000,
    idleTimeoutMs: 3_600_000,
    log,
  })
  try {
    let i = 0
    const call = async () => {
      const r = await pool.run({ code: CODE, entrypoint: 'handler', input: ++i, context: {}, timeoutMs: 5_000 })
      if (!r.ok) throw new Error(r.error.message)
    }
    await call()
    return await measure(label, 'sandbox-docker-warm', SAMPLES, call, { ...o, concurrency: CONCURRENCY })
  } finally {
    await pool.close()
  }
}

const benchmark: Benchmark = {
  name: 'sandbox-docker',
  description:
    'Docker driver on podman system service: container start to ready, single-use and warm-pool calls, against bubblewrap',
  async run() {
    const missing = ensurePodman()
    if (missing !== null) throw new Error(`podman unavailable: ${missing}`)
    const teardowns: (() => unknown)[] = []
    const socketDir = mkdtempSync(join(tmpdir(), 'platform-podman-bench-'))
    const prefix = `bench${String(process.pid)}-`
    try {
      const svc = await startPodmanService(
        { teardown: (fn) => teardowns.push(fn) },
        { socketDir, containerPrefix: prefix },
      )
      const docker = dockerDriver({ socketPath: svc.socketPath, image: svc.image })
      const bwrap = bubblewrapDriver({ python: '/usr/bin/python3' })
      const rows: Row[] = []

      rows.push(
        await measure(
          'single-use bubblewrap execution (start, ready, call, destroy)',
          'sandbox-docker-cold',
          COLD_SAMPLES,
          singleUse(bwrap, 'bw', { call: true }),
          { baseline: true },
        ),
      )
      rows.push(
        await measure(
          "container create, attach, start to the runner's ready frame",
          'sandbox-docker-cold',
          COLD_SAMPLES,
          singleUse(docker, `${prefix}r`, { call: false }),
        ),
      )
      rows.push(
        await measure(
          'single-use container execution (create, start, ready, call, remove)',
          'sandbox-docker-cold',
          COLD_SAMPLES,
          singleUse(docker, `${prefix}c`, { call: true }),
        ),
      )

      rows.push(
        await warmPoolCase(bwrap, `warm pool call (bubblewrap, ${String(CONCURRENCY)} sandboxes)`, { baseline: true }),
      )
      rows.push(await warmPoolCase(docker, `warm pool call (docker, ${String(CONCURRENCY)} containers)`))

      const [bwCold, ready, dCold, bwWarm, dWarm] = rows
      if (bwCold !== undefined && ready !== undefined)
        ready.note = `latency without the remove that follows; req/s with it; p50 ${(ready.latencyP50Ms / bwCold.latencyP50Ms).toFixed(1)}× a single-use bubblewrap execution`
      if (bwCold !== undefined && dCold !== undefined)
        dCold.note = `p50 ${(dCold.latencyP50Ms / bwCold.latencyP50Ms).toFixed(1)}× bubblewrap`
      if (bwWarm !== undefined && dWarm !== undefined)
        dWarm.note = `p50 ${(dWarm.latencyP50Ms / bwWarm.latencyP50Ms).toFixed(2)}× the warm bubblewrap call`
      return rows
    } finally {
      for (const fn of teardowns.reverse()) await fn()
      rmSync(socketDir, { recursive: true, force: true })
    }
  },
}

export default benchmark
