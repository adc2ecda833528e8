import { readdirSync, readFileSync } from 'node:fs'
import { randomUUID } from 'node:crypto'
import t from 'tap'
import type { ExecOutcome } from '../../sandbox/channel.ts'
import type { SandboxSpec } from '../../sandbox/driver.ts'
import { bubblewrapDriver } from '../../sandbox/drivers/bubblewrap.ts'
import { createSandboxExecutor, runOnce } from '../../sandbox/executor.ts'
import { loadConfig } from '../../src/kernel/config.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { eventually } from '../helpers/eventually.ts'
import { TEST_LIMITS } from './conformance.ts'

/*
 * SANDBOX_EXECUTOR=single_use with bubblewrap: the runner (`--single-use`) runs the one execution
 * in its own process, without a fork, and the platform keeps the time limit (channel execOnce).
 * Each outcome the exclusive runner reports itself (result and output, exception, timeout, a
 * process that dies) must come out the same, and nothing of the sandbox may outlive it.
 */
const driver = bubblewrapDriver({ python: '/usr/bin/python3' })
const ok = await driver.check()
if (!ok.ok) t.fail(`bubblewrap unavailable: ${ok.reason}`)

let n = 0
const spec = (): SandboxSpec => ({
  id: `su${String(process.pid)}x${String(++n)}`,
  mode: 'exclusive',
  network: false,
  limits: TEST_LIMITS,
  singleUse: true,
})
const py = (body: string): string =>
  `def handler(input, context):\n${body
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n')}\n`
const once = (body: string, input: unknown = null, timeoutMs = 10_000): Promise<ExecOutcome> =>
  runOnce(driver, spec(), { code: py(body), entrypoint: 'handler', input, context: { user_id: 'u1' }, timeoutMs })

/** Host processes whose command line holds `marker` (sandbox processes are visible from the host). */
function processesWith(marker: string): number[] {
  const found: number[] = []
  for (const p of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(p)) continue
    try {
      if (readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(marker)) found.push(Number(p))
    } catch {
      // gone meanwhile
    }
  }
  return found
}

t.test('a result, what the function printed, and its context', async (t) => {
  const r = await once('print("hi", input)\nreturn {"twice": input * 2, "user": context["user_id"]}', 21)
  t.same(r.ok ? r.result : r.error, { twice: 42, user: 'u1' })
  t.equal(r.output, 'hi 21\n')
})

t.test('the function runs in the runner process itself, with the protocol input gone', async (t) => {
  const r = await once(
    'import os\nreturn {"pid": os.getpid(), "stdin": os.readlink("/proc/self/fd/0"), "uid": os.getuid()}',
  )
  t.same(
    r.ok ? r.result : r.error,
    { pid: 2, stdin: '/dev/null', uid: 65534 },
    'pid 2 is the runner (bwrap is 1): no fork',
  )
})

t.test('an exception is an error outcome with the user traceback', async (t) => {
  const r = await once('raise KeyError("order 7")')
  t.equal(r.ok, false)
  if (!r.ok) {
    t.equal(r.error.type, 'KeyError')
    t.match(r.error.traceback, /line 2, in handler/)
    t.equal(r.timedOut, false)
  }
})

t.test('sleeping or spinning past the timeout is a TimeoutError, enforced by the platform', async (t) => {
  for (const body of ['import time\ntime.sleep(60)', 'while True:\n    pass']) {
    const started = Date.now()
    const r = await once(body, null, 1_000)
    t.equal(r.ok, false)
    if (!r.ok) {
      t.equal(r.error.type, 'TimeoutError')
      t.equal(r.error.message, 'the function ran longer than its timeout of 1 s')
      t.equal(r.timedOut, true)
    }
    // the channel's hung-runner backstop would answer only after timeout + 10 s
    t.ok(Date.now() - started < 9_000, 'answered by the time limit, not the backstop')
  }
})

t.test('a process that dies before answering is ProcessDied, as the exclusive runner says it', async (t) => {
  const exited = await once('import os\nos._exit(3)')
  t.same(exited.ok ? exited.result : exited.error, {
    type: 'ProcessDied',
    message: "the function's process exited with code 3 before it returned a result",
    traceback: '',
  })
  const killed = await once('import os, signal\nos.kill(os.getpid(), signal.SIGKILL)')
  t.same(killed.ok ? killed.result : killed.error, {
    type: 'ProcessDied',
    message: "the function's process was killed by signal 9 (memory or process limit) before it returned a result",
    traceback: '',
  })
  const memory = await once(`x = bytearray(${String(TEST_LIMITS.memoryMb * 4)} * 1024 * 1024)\nreturn len(x)`)
  t.equal(memory.ok, false, 'allocating 4x the memory limit fails')
  if (!memory.ok) t.match(memory.error.type, /MemoryError|ProcessDied/)
})

t.test('what the function started dies with its sandbox', async (t) => {
  const marker = `su-left-${randomUUID()}`
  const r = await once(
    `import subprocess, sys\nsubprocess.Popen([sys.executable, "-c", "import time\\ntime.sleep(600)", input])\nreturn "started"`,
    marker,
  )
  t.same(r.ok ? r.result : r.error, 'started')
  await eventually(
    async () => (processesWith(marker).length === 0 ? true : undefined),
    'the leftover process to be gone',
  )
  t.pass('no process of the execution is left on the host')
})

t.test('SANDBOX_EXECUTOR=single_use runs through this path', async (t) => {
  const config = loadConfig({ ...process.env, SANDBOX_EXECUTOR: 'single_use', SANDBOX_PYTHON: '/usr/bin/python3' })
  const executor = await createSandboxExecutor(config, createLogger({ level: 'warn' }))
  t.teardown(() => executor.close())
  const r = await executor.run(
    { code: py('import os\nreturn os.getpid()'), entrypoint: 'handler', input: null, context: {}, timeoutMs: 10_000 },
    { trusted: false },
  )
  t.same(r.ok ? r.result : r.error, 2, 'the runner ran it in its own process (--single-use)')
})
