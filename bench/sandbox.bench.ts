import { spawn, type ChildProcess } from 'node:child_process'
import { readdirSync, readFileSync, realpathSync } from 'node:fs'
import type { SandboxLimits } from '../sandbox/driver.ts'
import { bubblewrapDriver } from '../sandbox/drivers/bubblewrap.ts'
import { runOnce } from '../sandbox/executor.ts'
import { createWarmPool } from '../sandbox/pool.ts'
import { createLogger } from '../src/kernel/log.ts'
import { clockTicks, processTicks } from './lib/cpu.ts'
import type { Benchmark, Row } from './lib/types.ts'

/*
 * Function sandboxes, in one run:
 *   warm  a bare pipe round trip to a warm Python process speaking the same framing (the floor)
 *         vs a call through the warm bubblewrap pool (pre-forked child, limits, cleanup);
 *   cold  a raw `bwrap python3 -I -S -c pass` (the floor) vs a single-use execution (bubblewrap
 *         start, runner ready, one call, destroy).
 * Latency is per call with one call in flight and a 2 ms pause between calls (low load: the
 * previous sandbox's cleanup and next fork are off the measured path); req/s is flat out with
 * `CONCURRENCY` callers, where that cleanup (kill leftovers, empty /tmp, fork the next child)
 * competes for the same 2 cores.
 * "other µs/req" is the CPU of the bench process's children over the latency samples: the bare
 * Python, or the sandboxes (bwrap, the runner, and each execution's child with the fork, warm-up,
 * cleanup and exit around it; a single-use sandbox's once the bench has reaped it), so what a call
 * costs the machine shows next to its latency.
 */
const SAMPLES = Number(process.env['BENCH_SANDBOX_SAMPLES'] ?? 1000)
const COLD_SAMPLES = Number(process.env['BENCH_SANDBOX_COLD_SAMPLES'] ?? 60)
const CONCURRENCY = 4
export const FORK_FLOOR = 'the same pipe, each request answered by a fresh forked child (floor)'
const WARM_READY = 'warm pool call, its next child ready (one caller, a pause for the fork)'
/** Pause before each call of the "next child ready" row: longer than a sandbox's cycle here. */
const READY_GAP_MS = Number(process.env['BENCH_SANDBOX_READY_GAP_MS'] ?? 30)

/** The fork floor's note: what a fresh process per call costs over the bare pipe, in the same run. */
export const forkNote = (fork: Row, pipe: Row): string =>
  `p50 ${(fork.latencyP50Ms / pipe.latencyP50Ms).toFixed(2)}× the bare pipe; its children ${(fork.otherCpuUsPerReq ?? 0).toFixed(0)} µs CPU a call`

/** The warm call's note: against the pipe (the target) and against the fork floor that bounds it. */
export const warmNote = (warm: Row, pipe: Row, fork: Row): string =>
  `p50 ${(warm.latencyP50Ms / pipe.latencyP50Ms).toFixed(2)}× the bare pipe (target ≤ 2×), ${(warm.latencyP50Ms / fork.latencyP50Ms).toFixed(2)}× the fork floor; children's CPU ${((warm.otherCpuUsPerReq ?? 0) / Math.max(1, fork.otherCpuUsPerReq ?? 0)).toFixed(2)}× the fork floor's`
/** Pause between two latency samples (ms): latency is measured at low load, throughput flat out. */
export const GAP_MS = 2
export const PYTHON = realpathSync('/usr/bin/python3')
export const LIMITS: SandboxLimits = { memoryMb: 512, cpus: 1, tmpMb: 100, fileMb: 1024, maxProcs: 64, maxFiles: 256 }
const log = createLogger({ level: 'warn' })
export const CODE = 'def handler(input, context):\n    return {"echo": input}\n'

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms))

/**
 * CPU ticks of every descendant of `root`, reaped ones included: utime + stime + cutime + cstime
 * (fields 14-17 of /proc/<pid>/stat) of each live descendant, and cutime + cstime of `root` (the
 * ones it reaped). An execution's child is reaped by its sandbox's runner, so its CPU lands in the
 * runner's cutime.
 */
function descendantTicks(root: number): number {
  const stats = new Map<number, { ppid: number; ticks: number }>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    let text: string
    try {
      text = readFileSync(`/proc/${entry}/stat`, 'utf8')
    } catch {
      continue
    }
    // the command name (field 2) may hold spaces and parentheses: split after the last ')'
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ')
    stats.set(Number(entry), {
      ppid: Number(f[1]),
      ticks: Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]),
    })
  }
  const own = readFileSync(`/proc/${String(root)}/stat`, 'utf8')
  const f = own.slice(own.lastIndexOf(')') + 2).split(' ')
  let total = Number(f[13]) + Number(f[14])
  const tree = new Set([root])
  for (let grew = true; grew;) {
    grew = false
    for (const [pid, st] of stats) {
      if (!tree.has(pid) && tree.has(st.ppid)) {
        tree.add(pid)
        total += st.ticks
        grew = true
      }
    }
  }
  return total
}

export async function measureCalls(
  label: string,
  benchmark: string,
  samples: number,
  call: () => Promise<void>,
  o: { baseline?: boolean; concurrency?: number; gapMs?: number } = {},
): Promise<Row> {
  for (let i = 0; i < Math.min(50, samples / 10); i++) await call()
  const lat: number[] = []
  const ticks0 = processTicks(process.pid)
  const others0 = descendantTicks(process.pid)
  const t0 = performance.now()
  for (let i = 0; i < samples; i++) {
    // latency at low load: one call in flight, the next after a short pause
    if ((o.gapMs ?? 0) > 0) await pause(o.gapMs ?? 0)
    const s = performance.now()
    await call()
    lat.push(performance.now() - s)
  }
  const seqS = (performance.now() - t0) / 1000
  const cpuUs = (((processTicks(process.pid) - ticks0) / clockTicks()) * 1e6) / samples
  const otherUs = (((descendantTicks(process.pid) - others0) / clockTicks()) * 1e6) / samples
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
    otherCpuUsPerReq: otherUs,
    latencyP50Ms: pct(lat, 50),
    latencyP99Ms: pct(lat, 99),
    errors: 0,
  }
}

/**
 * A warm Python process answering framed JSON on a pipe: the floor of any warm call. With `fork`,
 * the floor of a fresh process per call instead: the same loop, but each request is read, decoded,
 * answered and exited by a child forked before it arrived (the runner's shape, without its limits,
 * warm-up, cleanup or sandbox), and the parent forks the next one once that child is reaped. Its
 * children's CPU per call is what a fork, its copy-on-write faults and its exit cost on this host.
 */
export function barePython(o: { fork?: boolean } = {}): { call: () => Promise<void>; stop: () => void } {
  const serve = [
    'def serve():',
    '    h = os.read(0, 4)',
    '    if not h: return False',
    '    n = struct.unpack(">I", h)[0]',
    '    b = b""',
    '    while len(b) < n: b += os.read(0, n - len(b))',
    '    req = json.loads(b)',
    '    d = json.dumps({"op": "result", "id": req["id"], "ok": True, "result": {"echo": req["input"]}}).encode()',
    '    os.write(1, struct.pack(">I", len(d)) + d)',
    '    return True',
  ]
  const loop =
    o.fork === true
      ? [
          'while True:',
          '    pid = os.fork()',
          '    if pid == 0:',
          '        os._exit(0 if serve() else 1)',
          '    if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0: break',
        ]
      : ['while serve(): pass']
  const src = ['import os, struct, json', ...serve, ...loop].join('\n')
  const child: ChildProcess = spawn(PYTHON, ['-I', '-S', '-c', src], { stdio: ['pipe', 'pipe', 'inherit'] })
  let pending: (() => void) | null = null
  let buf = Buffer.alloc(0)
  child.stdout?.on('data', (d: Buffer) => {
    buf = Buffer.concat([buf, d])
    while (buf.length >= 4 && buf.length >= 4 + buf.readUInt32BE(0)) {
      buf = buf.subarray(4 + buf.readUInt32BE(0))
      const p = pending
      pending = null
      p?.()
    }
  })
  let n = 0
  return {
    call: () =>
      new Promise<void>((resolve) => {
        pending = resolve
        const body = Buffer.from(
          JSON.stringify({
            op: 'exec',
            id: String(++n),
            code: CODE,
            entrypoint: 'handler',
            input: n,
            context: {},
            timeout_ms: 5000,
          }),
        )
        const head = Buffer.alloc(4)
        head.writeUInt32BE(body.length)
        child.stdin?.write(Buffer.concat([head, body]))
      }),
    stop: () => child.kill('SIGKILL'),
  }
}

const rawBwrap = () =>
  new Promise<void>((resolve, reject) => {
    const c = spawn(
      '/usr/bin/bwrap',
      [
        '--unshare-all',
        '--die-with-parent',
        '--ro-bind',
        '/usr',
        '/usr',
        '--symlink',
        'usr/lib',
        '/lib',
        '--symlink',
        'usr/lib64',
        '/lib64',
        '--proc',
        '/proc',
        '--dev',
        '/dev',
        '--tmpfs',
        '/tmp',
        PYTHON,
        '-I',
        '-S',
        '-c',
        'pass',
      ],
      { stdio: 'ignore' },
    )
    c.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`bwrap exited ${String(code)}`))))
  })

const benchmark: Benchmark = {
  name: 'sandbox',
  description: 'Warm-pool call vs a bare pipe to warm Python; single-use bubblewrap execution vs raw bwrap python3',
  async run() {
    const rows: Row[] = []
    const bare = barePython()
    rows.push(
      await measureCalls('bare pipe round trip to warm python3 (floor)', 'sandbox-warm', SAMPLES, bare.call, {
        baseline: true,
        gapMs: GAP_MS,
      }),
    )
    bare.stop()
    const forking = barePython({ fork: true })
    try {
      rows.push(await measureCalls(FORK_FLOOR, 'sandbox-warm', SAMPLES, forking.call, { gapMs: GAP_MS }))
    } finally {
      forking.stop()
    }

    const driver = bubblewrapDriver({ python: '/usr/bin/python3' })
    // as `npm start` does: installs bubblewrap when missing (as root) and says why it cannot run
    const usable = await driver.check()
    if (!usable.ok) throw new Error(`bubblewrap sandboxes cannot run here: ${usable.reason}`)
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
    let i = 0
    const warm = async () => {
      const r = await pool.run({ code: CODE, entrypoint: 'handler', input: ++i, context: {}, timeoutMs: 5_000 })
      if (!r.ok) throw new Error(r.error.message)
    }
    await warm()
    rows.push(
      await measureCalls(
        `warm pool call (bubblewrap, ${String(CONCURRENCY)} sandboxes)`,
        'sandbox-warm',
        SAMPLES,
        warm,
        {
          concurrency: CONCURRENCY,
          gapMs: GAP_MS,
        },
      ),
    )
    // One caller that leaves the sandbox time to fork and warm up its next child between calls:
    // the call itself, without the wait for a child that the row above pays whenever calls come
    // faster than a sandbox's cycle (cleanup, fork, warm-up) on this host.
    rows.push(await measureCalls(WARM_READY, 'sandbox-warm', Math.ceil(SAMPLES / 4), warm, { gapMs: READY_GAP_MS }))
    await pool.close()

    rows.push(
      await measureCalls('raw bwrap python3 -I -S -c pass (floor)', 'sandbox-cold', COLD_SAMPLES, rawBwrap, {
        baseline: true,
      }),
    )
    let k = 0
    const cold = async () => {
      // the single_use executor's own path (the teardown is off the caller's path there)
      const r = await runOnce(
        driver,
        { id: `cold${String(++k)}`, mode: 'exclusive', network: false, limits: LIMITS, singleUse: true },
        { code: CODE, entrypoint: 'handler', input: k, context: {}, timeoutMs: 5_000 },
      )
      if (!r.ok) throw new Error(r.error.message)
    }
    rows.push(
      await measureCalls(
        'single-use bubblewrap execution (start, ready, call, destroy)',
        'sandbox-cold',
        COLD_SAMPLES,
        cold,
      ),
    )

    const [floorW, forkR, warmR, readyR, floorC, coldR] = rows
    if (floorW !== undefined && forkR !== undefined) forkR.note = forkNote(forkR, floorW)
    if (floorW !== undefined && warmR !== undefined && forkR !== undefined) warmR.note = warmNote(warmR, floorW, forkR)
    if (floorW !== undefined && readyR !== undefined)
      readyR.note = `p50 ${(readyR.latencyP50Ms / floorW.latencyP50Ms).toFixed(2)}× the bare pipe (target ≤ 2×), ${String(READY_GAP_MS)} ms between calls`
    if (floorC !== undefined && coldR !== undefined)
      coldR.note = `p50 ${(coldR.latencyP50Ms / floorC.latencyP50Ms).toFixed(2)}× raw bwrap (target ≤ 1.3×)`
    return rows
  },
}

export default benchmark
