import { readFile, statfs } from 'node:fs/promises'
import { cpus, freemem, hostname, loadavg, totalmem } from 'node:os'
import type { HealthHost } from '../../schemas/system.ts'
import { reasonOf, withDeadline } from './health-service.ts'

/*
 * The host of the process that answers (a resources role): CPU (load averages, core count, and the
 * busy share of the cores over the time the probes took, at least SAMPLE_MS), memory (MemAvailable
 * from /proc/meminfo: free memory plus what the kernel can reclaim; os.freemem elsewhere) and the
 * disk holding DATA_DIR (statfs; used as `df` counts it: blocks not free, against those plus the
 * ones a normal user may still take).
 */
const SAMPLE_MS = 100

const cpuTimes = (): { busy: number; total: number } =>
  cpus().reduce(
    (a, c) => {
      const t = c.times.user + c.times.nice + c.times.sys + c.times.irq + c.times.idle
      return { busy: a.busy + t - c.times.idle, total: a.total + t }
    },
    { busy: 0, total: 0 },
  )

const round1 = (n: number): number => Math.round(n * 10) / 10

async function availableMemory(): Promise<number> {
  const text = await readFile('/proc/meminfo', 'utf8').catch(() => '')
  const kb = /^MemAvailable:\s+(\d+) kB$/m.exec(text)?.[1]
  return kb === undefined ? freemem() : Number(kb) * 1024
}

async function disk(path: string, timeoutMs: number): Promise<HealthHost['disk']> {
  try {
    // bounded like the probes: a statfs on a hung network mount does not return
    const s = await withDeadline(statfs(path), timeoutMs, `statfs ${path}`)
    const used = (s.blocks - s.bfree) * s.bsize
    const available = s.bavail * s.bsize
    return {
      path,
      total_bytes: s.blocks * s.bsize,
      available_bytes: available,
      used_percent: used + available === 0 ? null : round1((used / (used + available)) * 100),
      error: null,
    }
  } catch (err) {
    return { path, total_bytes: null, available_bytes: null, used_percent: null, error: reasonOf(err) }
  }
}

/** Starts the CPU sample now; `read()` ends it (waiting out SAMPLE_MS if the probes were quicker) and reads the rest. */
export function hostProbe(dataDir: string, timeoutMs: number): { read(): Promise<HealthHost> } {
  const start = cpuTimes()
  const startedAt = Date.now()
  return {
    async read() {
      const left = SAMPLE_MS - (Date.now() - startedAt)
      if (left > 0) await new Promise((r) => setTimeout(r, left))
      const end = cpuTimes()
      const total = end.total - start.total
      const [load1, load5, load15] = loadavg() as [number, number, number]
      const memTotal = totalmem()
      const memAvailable = Math.min(memTotal, await availableMemory())
      return {
        hostname: hostname(),
        cpu: {
          count: cpus().length,
          load_1m: round1(load1),
          load_5m: round1(load5),
          load_15m: round1(load15),
          used_percent: total > 0 ? round1(((end.busy - start.busy) / total) * 100) : null,
        },
        memory: {
          total_bytes: memTotal,
          available_bytes: memAvailable,
          used_percent: round1(((memTotal - memAvailable) / memTotal) * 100),
        },
        disk: await disk(dataDir, timeoutMs),
      }
    },
  }
}
