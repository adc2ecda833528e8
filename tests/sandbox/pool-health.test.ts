import { readdirSync, readFileSync } from 'node:fs'
import t from 'tap'
import type { SandboxProcess, SandboxSpec } from '../../sandbox/driver.ts'
import { bubblewrapDriver } from '../../sandbox/drivers/bubblewrap.ts'
import { createWarmPool } from '../../sandbox/pool.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { TEST_LIMITS } from './conformance.ts'
import { eventually } from '../helpers/eventually.ts'

/*
 * The warm pool's periodic check (SANDBOX_HEALTH_INTERVAL_SECONDS, here a fraction of a second):
 * an idle sandbox that stops answering its ping is destroyed and replaced, and idle sandboxes above
 * the pool's minimum are removed once idle for FUNCTION_CONTAINER_IDLE_TIMEOUT. Real bubblewrap
 * sandboxes; the unhealthy one is made so by stopping its processes (SIGSTOP), as a wedged runner
 * would be.
 */
const log = createLogger({ level: 'silent' })
const driver = bubblewrapDriver({ python: '/usr/bin/python3' })
const started: SandboxProcess[] = []
const spec = (id: string): SandboxSpec => ({ id, mode: 'exclusive', network: false, limits: TEST_LIMITS })
const recording = {
  ...driver,
  name: driver.name,
  check: () => driver.check(),
  close: () => driver.close(),
  async start(s: SandboxSpec) {
    const p = await driver.start(s)
    started.push(p)
    return p
  },
}
const req = (code: string) => ({
  code: `def handler(input, context):\n    ${code}\n`,
  entrypoint: 'handler',
  input: null,
  context: {},
  timeoutMs: 10_000,
})

/** `pid` and every process below it (a sandbox's processes are visible from the host). */
function tree(pid: number): number[] {
  const children = new Map<number, number[]>()
  for (const p of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(p)) continue
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      children.set(ppid, [...(children.get(ppid) ?? []), Number(p)])
    } catch {
      // gone meanwhile
    }
  }
  const out = [pid]
  for (let i = 0; i < out.length; i++) out.push(...(children.get(out[i] as number) ?? []))
  return out
}

t.teardown(async () => {
  for (const s of started) await s.destroy()
})

t.test('an idle sandbox that fails its health check is replaced', async (t) => {
  const pool = createWarmPool({
    name: 'health',
    driver: recording,
    spec,
    minSize: 1,
    maxSize: 1,
    minIdle: 1,
    maxExecutions: 100,
    healthIntervalMs: 200,
    idleTimeoutMs: 3_600_000,
    log,
  })
  t.teardown(() => pool.close())
  const first = await eventually(
    async () => (pool.stats().idle === 1 ? pool.names()[0] : undefined),
    'the first sandbox idle',
  )
  const r = await pool.run(req('return 1'))
  t.ok(r.ok, 'it answers before')
  const sick = started.find((p) => p.name === first)
  if (sick?.pid === undefined) throw new Error('no pid of the sandbox')
  for (const pid of tree(sick.pid)) process.kill(pid, 'SIGSTOP')
  // the ping times out (5 s), the sandbox is destroyed and a fresh one takes its place
  const next = await eventually(
    async () => {
      const names = pool.names()
      return names.length === 1 && names[0] !== first && pool.stats().idle === 1 ? names[0] : undefined
    },
    'a fresh sandbox in place of the stopped one',
    // the ping's 5 s, the kill and a new sandbox's start; the bound only stops a hang, and a start
    // under a full suite's load has taken over 20 s
    60_000,
  )
  t.not(next, first)
  t.equal(pool.stats().destroyed_on_error, 1, 'counted as destroyed on error')
  await sick.exited
  t.pass('the stopped sandbox is gone')
  const again = await pool.run(req('return 2'))
  t.same(again.ok ? again.result : again.error, 2, 'the pool runs again')
})

t.test('idle sandboxes above the minimum are removed after the idle timeout', async (t) => {
  const pool = createWarmPool({
    name: 'idle',
    driver: recording,
    spec,
    minSize: 1,
    maxSize: 3,
    minIdle: 1,
    maxExecutions: 100,
    healthIntervalMs: 100,
    idleTimeoutMs: 2_000,
    log,
  })
  t.teardown(() => pool.close())
  // three at once grow the pool to three sandboxes
  const rs = await Promise.all([1, 2, 3].map(() => pool.run(req('import time; time.sleep(0.3); return 3'))))
  t.ok(rs.every((r) => r.ok))
  t.equal(pool.stats().total, 3, 'three sandboxes after three concurrent runs')
  await eventually(
    async () => (pool.stats().total === 1 ? true : undefined),
    'back to the minimum after the idle timeout',
    15_000,
  )
  t.equal(pool.stats().idle, 1, 'one warm sandbox kept')
})
