import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { eventually } from '../helpers/eventually.ts'

/*
 * The runner leaves nothing behind however it ends: a benchmark's own nats-server (started in the
 * runner's process, in its own process group, so a signal to the runner never reaches it) is
 * stopped when the runner is stopped with SIGTERM, as `timeout` does.
 */
const repo = join(import.meta.dirname, '..', '..')

/** Live processes whose command line mentions `marker` (the benchmark's temporary directory). */
function processesUnder(marker: string): { pid: number; cmd: string }[] {
  const found: { pid: number; cmd: string }[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ')
      const state = /^State:\s+(\w)/m.exec(readFileSync(`/proc/${entry}/status`, 'utf8'))?.[1]
      if (cmd.includes(marker) && state !== 'Z') found.push({ pid: Number(entry), cmd })
    } catch {
      // gone meanwhile
    }
  }
  return found
}

t.test('SIGTERM to the runner stops the nats-server a benchmark started', async (t) => {
  const tmp = mkdtempSync(join(tmpdir(), 'bench-cleanup-'))
  t.teardown(() => {
    for (const p of processesUnder(tmp)) process.kill(p.pid, 'SIGKILL')
    rmSync(tmp, { recursive: true, force: true })
  })
  const runner = spawn(process.execPath, ['--import', 'tsx', 'bench/run.ts', 'schedules'], {
    cwd: repo,
    env: { ...process.env, TMPDIR: tmp, BENCH_README: '0' },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  runner.stderr.on('data', (b: Buffer) => (stderr = (stderr + b.toString('utf8')).slice(-4000)))
  const exited = new Promise<number | null>((resolve) => runner.once('exit', (code) => resolve(code)))
  const nats = await eventually(
    async () => processesUnder(tmp).find((p) => p.cmd.includes('nats-server')),
    'the benchmark to start its nats-server',
    120_000,
    100,
  )
  t.ok(nats.pid > 0, `nats-server ${String(nats.pid)} runs under the benchmark's directory`)
  runner.kill('SIGTERM')
  const code = await exited
  t.equal(code, 130, `the runner stopped on the signal\n${stderr}`)
  t.same(
    processesUnder(tmp).map((p) => p.cmd),
    [],
    'nothing the benchmark started is left running',
  )
})
