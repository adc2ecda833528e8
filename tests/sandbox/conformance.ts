import type { Test } from 'tap'
import { openChannel, type ExecOutcome, type RunnerChannel } from '../../sandbox/channel.ts'
import type { SandboxDriver, SandboxLimits, SandboxProcess, SandboxSpec } from '../../sandbox/driver.ts'
import { runIsolationChecks } from './isolation-checks.ts'

/*
 * The conformance suite every sandbox driver must pass, including the hostile functions: reading
 * host files and environment, reaching the platform's NATS and Postgres ports, fork and memory
 * bombs, CPU spins past the timeout, filling /tmp, writing outside /tmp, and leaving data, processes
 * or globals behind for the next execution (files, IPC objects, keys, traced processes: see
 * isolation-checks.ts). Each must end with a clear execution error (or a
 * harmless success) and leave the platform unharmed.
 */
export interface ConformanceOptions {
  /** Host TCP ports the sandbox must not reach (the platform's NATS and Postgres). */
  hostPorts: number[]
  /** Environment variable names of the platform that must not be visible inside. */
  secretEnv: string[]
  /** Capabilities the driver is allowed to keep (docker keeps CHOWN, SETUID, SETGID). */
  allowedCaps?: number[]
  limits?: Partial<SandboxLimits>
}

export const TEST_LIMITS: SandboxLimits = {
  memoryMb: 256,
  cpus: 1,
  tmpMb: 100,
  fileMb: 200,
  maxProcs: 32,
  maxFiles: 256,
}

const py = (body: string): string =>
  `def handler(input, context):\n${body
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n')}\n`

export async function runConformance(
  t: Test,
  makeDriver: () => Promise<SandboxDriver>,
  o: ConformanceOptions,
): Promise<void> {
  const driver = await makeDriver()
  const ok = await driver.check()
  if (!ok.ok) {
    t.fail(`driver ${driver.name} unavailable: ${ok.reason}`)
    return
  }
  const limits = { ...TEST_LIMITS, ...o.limits }
  const spec = (id: string): SandboxSpec => ({ id, mode: 'exclusive', network: false, limits })
  let n = 0
  const started: SandboxProcess[] = []
  t.teardown(async () => {
    for (const s of started) await s.destroy()
    await driver.close()
  })
  const fresh = async (): Promise<{ sb: SandboxProcess; ch: RunnerChannel }> => {
    const sb = await driver.start(spec(`conf${String(process.pid)}x${String(++n)}`))
    started.push(sb)
    const ch = openChannel(sb)
    await ch.ready
    return { sb, ch }
  }
  const run = (ch: RunnerChannel, body: string, input: unknown = null, timeoutMs = 10_000): Promise<ExecOutcome> =>
    ch.exec({ code: py(body), entrypoint: 'handler', input, context: { user_id: 'u1' }, timeoutMs })
  const value = (r: ExecOutcome): unknown => (r.ok ? r.result : { error: r.error })

  const { ch } = await fresh()

  await t.test(`${driver.name}: runs a function, returns JSON and captures what it prints`, async (t) => {
    const r = await run(ch, 'print("hi", input)\nreturn {"twice": input * 2, "user": context["user_id"]}', 21)
    t.same(value(r), { twice: 42, user: 'u1' })
    t.equal(r.output, 'hi 21\n')
    const e = await run(ch, 'raise KeyError("order 7")')
    t.equal(e.ok, false)
    if (!e.ok) {
      t.equal(e.error.type, 'KeyError')
      t.match(e.error.traceback, /line 2, in handler/)
    }
  })

  await t.test(`${driver.name}: output is capped at 64 KB, with what was dropped said at the end`, async (t) => {
    const r = await run(ch, 'import sys\nsys.stdout.write("é" * 40000)\nreturn 1')
    t.equal(r.ok, true)
    // 80,000 bytes of UTF-8 printed: the first 65,536 kept (decoded), the rest counted
    t.equal(r.output, `${'é'.repeat(32768)}\n[output truncated: 14464 bytes dropped]`)
    const none = await run(ch, 'return 2')
    t.equal(none.output, '')
  })

  await t.test(`${driver.name}: nothing of the host or the platform is visible`, async (t) => {
    const r = await run(
      ch,
      [
        'import os',
        'env = dict(os.environ)',
        'def can_read(p):',
        '    try:',
        '        open(p, "rb").read(1)',
        '        return True',
        '    except OSError:',
        '        return False',
        'pids = [p for p in os.listdir("/proc") if p.isdigit()]',
        'cmds = []',
        'for p in pids:',
        '    try:',
        '        cmds.append(open("/proc/%s/cmdline" % p, "rb").read().decode(errors="replace"))',
        '    except OSError:',
        '        pass',
        'return {"env": env, "root": sorted(os.listdir("/")), "shadow": can_read("/etc/shadow"), "hostname": can_read("/etc/hostname"),',
        '        "repo": os.path.exists("/work") or os.path.exists("/root") or os.path.exists("/home"), "cmds": cmds, "uid": os.getuid()}',
      ].join('\n'),
    )
    t.ok(r.ok, JSON.stringify(value(r)))
    const v = (r.ok ? r.result : {}) as {
      env: Record<string, string>
      root: string[]
      shadow: boolean
      repo: boolean
      cmds: string[]
      uid: number
    }
    for (const name of o.secretEnv) t.notOk(name in v.env, `${name} is not in the environment`)
    t.notOk(v.shadow, '/etc/shadow is not readable')
    t.notOk(v.repo, 'no /work, /root or /home')
    t.ok(
      v.cmds.every((c) => !/node|nats-server|postgres/.test(c)),
      'no platform process is visible',
    )
    t.not(v.uid, 0, 'not root inside')
  })

  await t.test(`${driver.name}: no network: the platform's ports and the internet are unreachable`, async (t) => {
    const targets = [
      ...o.hostPorts.map((p) => ['127.0.0.1', p] as const),
      ['1.1.1.1', 53] as const,
      ['10.0.2.2', 5432] as const,
    ]
    const r = await run(
      ch,
      [
        'import socket',
        'out = {}',
        'for host, port in input:',
        '    s = socket.socket()',
        '    s.settimeout(1)',
        '    try:',
        '        s.connect((host, port))',
        '        out["%s:%d" % (host, port)] = "connected"',
        '    except OSError as e:',
        '        out["%s:%d" % (host, port)] = "refused: %s" % e',
        '    finally:',
        '        s.close()',
        'return out',
      ].join('\n'),
      targets,
    )
    t.ok(r.ok)
    for (const [k, v] of Object.entries((r.ok ? r.result : {}) as Record<string, string>))
      t.match(v, /^refused/, `${k} unreachable`)
  })

  await t.test(`${driver.name}: read-only system, a bounded in-memory /tmp`, async (t) => {
    const r = await run(
      ch,
      [
        'import os',
        'res = {}',
        'for p in ["/usr/evil", "/runner/evil", "/evil", "/bin/evil"]:',
        '    try:',
        '        open(p, "w").write("x")',
        '        res[p] = "written"',
        '    except OSError as e:',
        '        res[p] = "refused"',
        'open("/tmp/ok", "w").write("fine")',
        'res["tmp"] = open("/tmp/ok").read()',
        'chunk = b"x" * (1024 * 1024)',
        'written = 0',
        'try:',
        '    with open("/tmp/fill", "wb") as f:',
        '        for i in range(400):',
        '            f.write(chunk)',
        '            f.flush()',
        '            written += 1',
        'except OSError as e:',
        '    res["fill_error"] = type(e).__name__',
        'res["written_mb"] = written',
        'return res',
      ].join('\n'),
    )
    t.ok(r.ok, JSON.stringify(value(r)))
    const v = (r.ok ? r.result : {}) as Record<string, unknown>
    for (const p of ['/usr/evil', '/runner/evil', '/evil', '/bin/evil']) t.equal(v[p], 'refused', `cannot write ${p}`)
    t.equal(v['tmp'], 'fine', '/tmp is writable')
    t.ok(typeof v['fill_error'] === 'string', `filling /tmp stops with an error (${String(v['fill_error'])})`)
    t.ok(
      Number(v['written_mb']) <= limits.tmpMb,
      `at most ${String(limits.tmpMb)} MB written (${String(v['written_mb'])})`,
    )
  })

  await t.test(`${driver.name}: a warm sandbox leaves nothing for the next execution`, async (t) => {
    const first = await run(
      ch,
      [
        'import os, sys, subprocess, builtins, json',
        'open("/tmp/secret-of-a", "w").write("card 4242")',
        'os.makedirs("/tmp/dir/sub", exist_ok=True)',
        'builtins.LEAK = "from a"',
        // json: a module the function imported; os: one the runner itself holds (inherited from its zygote)
        'sys.modules["json"].LEAK = "from a"',
        'sys.modules["os"].LEAK = "from a"',
        "p = subprocess.Popen([sys.executable, \"-c\", \"import time\\nwhile True:\\n    open('/tmp/late', 'w').write('x')\\n    time.sleep(0.01)\"])",
        'return p.pid',
      ].join('\n'),
    )
    t.ok(first.ok, JSON.stringify(value(first)))
    const second = await run(
      ch,
      [
        'import os, builtins, json',
        'procs = []',
        'for p in os.listdir("/proc"):',
        '    if p.isdigit():',
        '        try:',
        '            procs.append(open("/proc/%s/cmdline" % p, "rb").read().decode(errors="replace"))',
        '        except OSError:',
        '            pass',
        'return {"tmp": sorted(os.listdir("/tmp")), "builtin": hasattr(builtins, "LEAK"), "module": hasattr(json, "LEAK") or hasattr(os, "LEAK"), "sleepers": [c for c in procs if "while True" in c]}',
      ].join('\n'),
    )
    t.same(
      value(second),
      { tmp: [], builtin: false, module: false, sleepers: [] },
      'no file, global, module change or process of the previous execution',
    )
  })

  // a sandbox of their own: each check is one execution that plants something, then one that looks
  await runIsolationChecks(t, { name: driver.name, fresh: async () => (await fresh()).ch, run, limits })

  await t.test(`${driver.name}: a function cannot reach the runner's pipes or forge its messages`, async (t) => {
    const peek = await run(
      ch,
      [
        'import os',
        'out = {}',
        'for what in ["fd/0", "fd", "mem", "environ"]:',
        '    try:',
        '        p = "/proc/%d/%s" % (os.getppid(), what)',
        '        if what == "fd":',
        '            os.listdir(p)',
        '        else:',
        '            open(p, "rb").read(1)',
        '        out[what] = "readable"',
        '    except OSError as e:',
        '        out[what] = type(e).__name__',
        'return out',
      ].join('\n'),
    )
    t.ok(peek.ok, JSON.stringify(value(peek)))
    for (const [what, how] of Object.entries((peek.ok ? peek.result : {}) as Record<string, string>))
      t.not(how, 'readable', `the runner's /proc/<pid>/${what} is closed to the function`)
    // writing 'done' on every descriptor it holds must not lift the time limit (a fresh sandbox:
    // the garbage also lands on the protocol output, which breaks that sandbox, as it should)
    const { ch: victim } = await fresh()
    const forged = await run(
      victim,
      'import os, time\nfor fd in range(3, 64):\n    try:\n        os.write(fd, b"D")\n    except OSError:\n        pass\ntime.sleep(60)',
      null,
      1_000,
    ).catch((err: unknown) => ({ thrown: String(err) }))
    t.ok(
      'thrown' in forged || (!forged.ok && forged.timedOut),
      `still stopped (${JSON.stringify('thrown' in forged ? forged : value(forged))})`,
    )
  })

  await t.test(`${driver.name}: CPU spins and sleeps past the timeout end as timeouts`, async (t) => {
    const spin = await run(ch, 'while True:\n    pass', null, 1_000)
    t.equal(spin.ok, false)
    if (!spin.ok) t.ok(spin.timedOut, 'timed out')
    const after = await run(ch, 'return "still here"')
    t.same(value(after), 'still here', 'the runner survives')
  })

  await t.test(`${driver.name}: memory bombs are contained`, async (t) => {
    const r = await run(ch, `x = bytearray(${String(limits.memoryMb * 4)} * 1024 * 1024)\nreturn len(x)`)
    t.equal(r.ok, false, 'allocating 4x the limit fails')
    if (!r.ok) t.match(r.error.type, /MemoryError|ProcessDied/)
    const grow = await run(ch, 'xs = []\nwhile True:\n    xs.append(b"y" * (16 * 1024 * 1024))')
    t.equal(grow.ok, false, 'growing without end fails')
    t.same(value(await run(ch, 'return 1')), 1, 'the sandbox still works')
  })

  await t.test(`${driver.name}: fork bombs are contained`, async (t) => {
    const r = await run(
      ch,
      [
        'import os',
        'n = 0',
        'try:',
        '    for i in range(10000):',
        '        if os.fork() == 0:',
        '            import time',
        '            time.sleep(30)',
        '            os._exit(0)',
        '        n += 1',
        'except OSError as e:',
        '    return {"stopped_after": n, "error": type(e).__name__}',
        'return {"stopped_after": n}',
      ].join('\n'),
      null,
      15_000,
    )
    t.ok(r.ok, JSON.stringify(value(r)))
    const v = (r.ok ? r.result : {}) as { stopped_after: number; error?: string }
    t.ok(
      v.stopped_after < limits.maxProcs,
      `forking stops at the process limit (${String(v.stopped_after)} < ${String(limits.maxProcs)})`,
    )
    const next = await run(ch, 'import os\nreturn len([p for p in os.listdir("/proc") if p.isdigit()])')
    t.ok(
      next.ok && Number(next.result) <= 4,
      `the forks are gone before the next execution (${JSON.stringify(value(next))} processes)`,
    )
  })

  await t.test(`${driver.name}: no capabilities, no new privileges`, async (t) => {
    const r = await run(
      ch,
      'import os\nst = dict(l.split(":\\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\\t" in l)\nreturn {"eff": st["CapEff"].strip(), "bnd": st["CapBnd"].strip(), "nnp": st.get("NoNewPrivs", "?").strip(), "policy": os.sched_getscheduler(0)}',
    )
    t.ok(r.ok, JSON.stringify(value(r)))
    const v = (r.ok ? r.result : {}) as { eff: string; nnp: string; policy: number }
    // the runner's own work runs under SCHED_BATCH; a function runs under the normal policy
    t.equal(v.policy, 0, 'the function runs under SCHED_OTHER')
    const eff = BigInt(`0x${v.eff}`)
    const allowed = (o.allowedCaps ?? []).reduce((a, c) => a | (1n << BigInt(c)), 0n)
    t.equal(eff & ~allowed, 0n, `no capability beyond the allowed ones (CapEff ${v.eff})`)
    t.equal(v.nnp, '1', 'NoNewPrivs is set')
  })

  await t.test(`${driver.name}: killing the runner from inside breaks only that sandbox`, async (t) => {
    const { ch: victim } = await fresh()
    // the execution itself may still answer (its own process lives on a moment), but the sandbox is gone
    await run(victim, 'import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nreturn 1').catch(() => undefined)
    for (let i = 0; i < 100 && !victim.broken; i++) await new Promise((r) => setTimeout(r, 50))
    t.ok(victim.broken, 'the sandbox is marked broken (the pool replaces it)')
    t.same(value(await run(ch, 'return "others unaffected"')), 'others unaffected')
  })
}
