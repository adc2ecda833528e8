import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/*
 * A real Prometheus for the metrics tests: Debian's `prometheus` (tests/run.sh installs it when
 * root), started as a child process on a free port with a config and a TSDB directory of its own
 * in a temporary directory, scraping the given targets every second; stopped and removed in
 * teardown. `skip` says why when it cannot run (not installed and not root to install it).
 */
interface Teardown {
  teardown(fn: () => unknown): void
}

export interface ScrapeTarget {
  /** host:port */
  address: string
  /** The bearer token the scrape sends (METRICS_TOKEN). */
  token?: string
}

/** One sample of an instant vector: its labels and value. */
export interface PromSample {
  metric: Record<string, string>
  value: number
}

export interface Prometheus {
  skip: string | false
  url: string
  /** An instant query (`/api/v1/query`): the vector's samples. */
  query(promql: string): Promise<PromSample[]>
}

const has = (cmd: string): boolean => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0

function ensureInstalled(): string | false {
  if (has('prometheus')) return false
  if (process.getuid?.() !== 0) return 'prometheus is not installed and the tests do not run as root to install it'
  const r = spawnSync('sh', ['-c', 'apt-get install -y -qq --no-install-recommends prometheus'], {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    stdio: 'inherit',
  })
  return r.status === 0 && has('prometheus') ? false : 'apt-get install prometheus failed'
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.listen(0, '127.0.0.1', () => {
      const a = s.address()
      const port = typeof a === 'object' && a !== null ? a.port : 0
      s.close(() => resolve(port))
    })
    s.on('error', reject)
  })
}

function configOf(targets: readonly ScrapeTarget[]): string {
  const jobs = targets.map((target, i) =>
    [
      `  - job_name: platform-${String(i)}`,
      '    metrics_path: /metrics',
      ...(target.token === undefined
        ? []
        : ['    authorization:', `      credentials: ${JSON.stringify(target.token)}`]),
      '    static_configs:',
      `      - targets: [${JSON.stringify(target.address)}]`,
    ].join('\n'),
  )
  return ['global:', '  scrape_interval: 1s', '  scrape_timeout: 1s', 'scrape_configs:', ...jobs, ''].join('\n')
}

export async function startPrometheus(t: Teardown, targets: readonly ScrapeTarget[]): Promise<Prometheus> {
  const skip = ensureInstalled()
  if (skip !== false) return { skip, url: '', query: async () => [] }
  const dir = mkdtempSync(join(tmpdir(), 'prometheus-test-'))
  writeFileSync(join(dir, 'prometheus.yml'), configOf(targets))
  const port = await freePort()
  const url = `http://127.0.0.1:${String(port)}`
  const proc = spawn(
    'prometheus',
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${String(port)}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  )
  let stderr = ''
  proc.stderr?.on('data', (b: Buffer) => {
    stderr = (stderr + b.toString()).slice(-4000)
  })
  t.teardown(async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise((r) => proc.once('exit', r))
      proc.kill('SIGTERM')
      await exited
    }
    rmSync(dir, { recursive: true, force: true })
  })
  // ready when its HTTP API answers /-/ready (the TSDB opened); the process exiting fails at once
  const exited = new Promise<never>((_, reject) =>
    proc.once('exit', (code) => reject(new Error(`prometheus exited (${String(code)}): ${stderr}`))),
  )
  const ready = (async () => {
    for (;;) {
      const ok = await fetch(`${url}/-/ready`).then(
        (r) => r.ok,
        () => false,
      )
      if (ok) return
      await new Promise((r) => setTimeout(r, 100))
    }
  })()
  // its rejection at the stop in teardown is expected: nobody waits on it then
  exited.catch(() => undefined)
  await Promise.race([ready, exited])
  return {
    skip: false,
    url,
    async query(promql) {
      const r = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(promql)}`)
      const body = (await r.json()) as {
        status: string
        error?: string
        data?: { resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] }
      }
      if (body.status !== 'success' || body.data === undefined)
        throw new Error(`query ${promql}: ${body.error ?? r.status}`)
      return body.data.result.map((s) => ({ metric: s.metric, value: Number(s.value[1]) }))
    },
  }
}
