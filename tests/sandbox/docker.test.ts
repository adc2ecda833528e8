import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Docker from 'dockerode'
import t from 'tap'
import { openChannel, type ExecOutcome, type RunnerChannel } from '../../sandbox/channel.ts'
import type { SandboxDriver, SandboxLimits, SandboxProcess, SandboxSpec } from '../../sandbox/driver.ts'
import { dockerDriver } from '../../sandbox/drivers/docker.ts'
import { ensureSandboxImage } from '../../sandbox/image.ts'
import { ensurePodman, startPodmanService } from '../helpers/podman.ts'
import { readServices } from '../setup/services.ts'
import { runConformance } from './conformance.ts'
import { startTestPlatform } from '../helpers/env.ts'

// Containers started through podman for every check: ~110 s on a quiet 2-core machine, over the
// 180 s a file gets inside a loaded suite (a fresh clone's run cut its last check).
t.setTimeout(420_000)

/*
 * The docker driver against a real Docker Engine API: `podman system service` (tests/helpers/podman.ts)
 * with the sandbox image imported by sandbox/image.ts. The shared conformance suite first, then
 * the checks particular to containers (engine settings, cgroup limits, podman's quirks). Every
 * check runs user code through the runner in a real container.
 */

interface Teardown {
  teardown(fn: () => unknown): void
}

/** Capabilities of the function's process, and whether it can make itself root. */
const SETUID_PROBE =
  [
    'import os',
    'def handler(i, c):',
    '    s = dict(l.split(":\\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\\t" in l)',
    '    try:',
    '        os.setuid(0)',
    '        r = "became uid %d" % os.getuid()',
    '    except OSError as e:',
    '        r = type(e).__name__',
    '    return {"eff": s["CapEff"].strip(), "bnd": s["CapBnd"].strip(), "setuid": r}',
  ].join('\n') + '\n'

const skip = ensurePodman()
if (skip !== null) {
  t.plan(0, skip)
} else {
  await main()
}

async function main(): Promise<void> {
  const socketDir = mkdtempSync(join(tmpdir(), 'platform-podman-'))
  t.teardown(() => rmSync(socketDir, { recursive: true, force: true }))
  // every container of this file is named platform-sbx-<prefix>…, removed at teardown if a test left one
  const prefix = `dt${String(process.pid)}-`
  const svc = await startPodmanService(t, { socketDir, containerPrefix: prefix })
  const docker = new Docker({ socketPath: svc.socketPath })
  const driver: SandboxDriver = dockerDriver({ socketPath: svc.socketPath, image: svc.image })
  t.teardown(() => driver.close())

  // the shared suite (hostile functions included), then what is particular to this driver
  const services = readServices()
  const port = (url: string): number => Number(new URL(url).port)
  await runConformance(t, async () => dockerDriver({ socketPath: svc.socketPath, image: svc.image }), {
    hostPorts: [port(services.natsUrl), port(services.pgBase), 4222, 5432],
    secretEnv: ['SECRET_KEY', 'ENCRYPTION_KEY', 'DATABASE_URL', 'NATS_URL', 'USER', 'LOGNAME', 'NODE_OPTIONS'],
    // none: the driver adds no capability back by default (see capAdd)
    allowedCaps: [],
  })

  const LIMITS: SandboxLimits = { memoryMb: 256, cpus: 1, tmpMb: 16, fileMb: 8, maxProcs: 32, maxFiles: 128 }
  let n = 0

  interface Box {
    sb: SandboxProcess
    ch: RunnerChannel
    spec: SandboxSpec
    run(code: string, input?: unknown, timeoutMs?: number): Promise<ExecOutcome>
  }

  async function box(tt: Teardown, over: Partial<SandboxSpec> = {}): Promise<Box> {
    const spec: SandboxSpec = {
      id: `${prefix}${String(n++)}`,
      mode: 'exclusive',
      limits: LIMITS,
      network: false,
      ...over,
    }
    const sb = await driver.start(spec)
    tt.teardown(() => sb.destroy())
    const ch = openChannel(sb)
    await ch.ready
    return {
      sb,
      ch,
      spec,
      run: (code, input = null, timeoutMs = 10_000) =>
        ch.exec({ code, entrypoint: 'handler', input, context: { k: 'v' }, timeoutMs }),
    }
  }

  /** The result of a successful execution (fails the test with the error otherwise). */
  async function ok(b: Box, code: string, input: unknown = null): Promise<unknown> {
    const r = await b.run(code, input)
    if (!r.ok) throw new Error(`execution failed: ${r.error.type}: ${r.error.message}\n${r.error.traceback}`)
    return r.result
  }

  t.test('check(): ok with the image, a reason without it or without an engine', async (t) => {
    t.same(await driver.check(), { ok: true })
    const noImage = await dockerDriver({
      socketPath: svc.socketPath,
      image: 'localhost/platform-sandbox:missing',
    }).check()
    t.equal(noImage.ok, false)
    t.match(noImage.ok ? '' : noImage.reason, /image .* not found/)
    const noEngine = await dockerDriver({ socketPath: join(socketDir, 'nothing.sock'), image: svc.image }).check()
    t.equal(noEngine.ok, false)
    t.match(noEngine.ok ? '' : noEngine.reason, /does not answer/)
  })

  t.test('a function runs and returns JSON, stdout is captured, the container is configured as asked', async (t) => {
    const b = await box(t)
    const r = await b.run(
      'import sys\ndef handler(i, c):\n    print("hello", i)\n    print("err", file=sys.stderr)\n    return {"double": i * 2, "ctx": c, "list": [1, None, True]}\n',
      21,
    )
    t.same(r, {
      ok: true,
      result: { double: 42, ctx: { k: 'v' }, list: [1, null, true] },
      output: 'hello 21\nerr\n',
      durationMs: r.durationMs,
    })
    t.equal(b.sb.name, `platform-sbx-${b.spec.id}`)
    const info = await docker.getContainer(b.sb.name).inspect()
    t.equal(info.Config.Labels['platform.sandbox'], '1')
    t.equal(info.Config.Labels['platform.sandbox.id'], b.spec.id)
    t.equal(info.Config.User, '65534:65534')
    t.equal(info.HostConfig.ReadonlyRootfs, true)
    t.equal(info.HostConfig.Memory, 256 * 1024 * 1024)
    t.equal(info.HostConfig.PidsLimit, 32)
    t.equal(info.HostConfig.NetworkMode, 'none')
    // the cgroup limits as the container sees them (cgroup v1 here)
    const cg = (await ok(
      b,
      'def handler(i, c):\n    r = lambda p: open(p).read().strip()\n    return [r("/sys/fs/cgroup/memory/memory.limit_in_bytes"), r("/sys/fs/cgroup/pids/pids.max"), r("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), r("/sys/fs/cgroup/cpu/cpu.cfs_period_us")]\n',
    )) as string[]
    t.same(cg, [String(256 * 1024 * 1024), '32', '100000', '100000'])
    // several requests in a row on the same sandbox
    for (let i = 0; i < 5; i++) t.same(await ok(b, 'def handler(i, c):\n    return i + 1\n', i), i + 1)
  })

  t.test('exceptions come back as errors; the sandbox stays usable', async (t) => {
    const b = await box(t)
    const r = await b.run('def handler(i, c):\n    raise ValueError("bad input %s" % i)\n', 7)
    t.equal(r.ok, false)
    if (!r.ok) {
      t.equal(r.error.type, 'ValueError')
      t.equal(r.error.message, 'bad input 7')
      t.match(r.error.traceback, /ValueError: bad input 7/)
      t.equal(r.timedOut, false)
    }
    const syntax = await b.run('def handler(i, c)\n    return 1\n')
    t.equal(syntax.ok ? '' : syntax.error.type, 'SyntaxError')
    const exit = await b.run('import sys\ndef handler(i, c):\n    sys.exit(3)\n')
    t.equal(exit.ok ? '' : exit.error.type, 'SystemExit')
    t.same(await ok(b, 'def handler(i, c):\n    return "still here"\n'), 'still here')
  })

  t.test('timeout: a busy loop is stopped, the next call works', async (t) => {
    const b = await box(t)
    const started = Date.now()
    const r = await b.run('def handler(i, c):\n    while True:\n        pass\n', null, 1000)
    t.equal(r.ok, false)
    if (!r.ok) {
      t.equal(r.timedOut, true)
      t.equal(r.error.type, 'TimeoutError')
    }
    t.ok(Date.now() - started < 5000, 'answered soon after the timeout')
    t.same(await ok(b, 'def handler(i, c):\n    return 1\n'), 1)
  })

  t.test('memory: 1 GB in a 256 MB sandbox fails, the sandbox is still usable', async (t) => {
    const b = await box(t)
    const r = await b.run('def handler(i, c):\n    b = bytearray(1 << 30)\n    return len(b)\n')
    t.equal(r.ok, false)
    t.match(r.ok ? '' : r.error.type, /MemoryError|ProcessDied/)
    // the cgroup, not only the runner's RLIMIT_AS: two processes of 150 MB each exceed 256 MB together
    const both = await b
      .run(
        [
          'import os, time',
          'def fill(mb):',
          '    b = bytearray(mb << 20)',
          '    for k in range(0, len(b), 4096):',
          '        b[k] = 1',
          '    return b',
          'def handler(i, c):',
          '    pid = os.fork()',
          '    if pid == 0:',
          '        b = fill(150)',
          '        time.sleep(1)',
          '        os._exit(0)',
          '    time.sleep(0.3)',
          '    b = fill(150)',
          '    _, status = os.waitpid(pid, 0)',
          '    return "both fit" if status == 0 else "one was killed (%d)" % status',
        ].join('\n') + '\n',
      )
      .catch((err: unknown) => ({ ok: false as const, broken: String(err) }))
    t.not(
      both.ok ? both.result : '',
      'both fit',
      `the cgroup stopped 300 MB in a 256 MB sandbox: ${JSON.stringify(both).slice(0, 300)}`,
    )
    if (b.ch.broken) {
      // the OOM killer may take the runner (PID 1): the sandbox is gone, and destroy is clean
      await b.sb.destroy()
      t.pass('sandbox destroyed after the OOM kill')
    } else {
      t.same(await ok(b, 'def handler(i, c):\n    return len(bytearray(50 << 20))\n'), 50 << 20)
    }
  })

  t.test('no network: only a loopback; outside addresses and the host loopback are unreachable', async (t) => {
    const b = await box(t)
    const res = (await ok(
      b,
      [
        'import socket',
        'def probe(host, port):',
        '    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)',
        '    s.settimeout(2)',
        '    try:',
        '        s.connect((host, port))',
        '        return "connected"',
        '    except OSError as e:',
        '        return type(e).__name__',
        '    finally:',
        '        s.close()',
        'def handler(i, c):',
        '    ifaces = [l.split(":")[0].strip() for l in open("/proc/net/dev").read().splitlines()[2:]]',
        '    try:',
        '        socket.getaddrinfo("example.com", 80)',
        '        dns = "resolved"',
        '    except OSError as e:',
        '        dns = type(e).__name__',
        '    return {"out": probe("1.1.1.1", 53), "nats": probe("127.0.0.1", 4222), "pg": probe("127.0.0.1", 5432), "ifaces": ifaces, "dns": dns}',
      ].join('\n') + '\n',
    )) as Record<string, unknown>
    t.not(res['out'], 'connected')
    t.not(res['nats'], 'connected', 'the host nats-server is not reachable')
    t.not(res['pg'], 'connected', 'the host Postgres is not reachable')
    t.same(res['ifaces'], ['lo'])
    t.not(res['dns'], 'resolved')
  })

  t.test('read-only root; /tmp writable up to tmpMb; /run and /var/tmp not writable', async (t) => {
    const b = await box(t)
    const res = (await ok(
      b,
      [
        'import os',
        'def w(p, n=1):',
        '    try:',
        '        with open(p, "wb") as f:',
        '            f.write(b"x" * n)',
        '        return "written"',
        '    except OSError as e:',
        '        return e.strerror',
        'def handler(i, c):',
        '    st = os.statvfs("/tmp")',
        '    return {"usr": w("/usr/x"), "root": w("/x"), "etc": w("/etc/passwd"), "runner": w("/runner/runner.py"), "run": w("/run/x"), "vartmp": w("/var/tmp/x"),',
        '            "tmp": w("/tmp/x"), "tmpSize": st.f_blocks * st.f_frsize, "big": w("/tmp/big", 7 << 20), "bigger": w("/tmp/big2", 12 << 20)}',
      ].join('\n') + '\n',
    )) as Record<string, unknown>
    for (const k of ['usr', 'root', 'etc', 'runner', 'run', 'vartmp']) t.not(res[k], 'written', `${k} is not writable`)
    t.equal(res['tmp'], 'written')
    t.ok((res['tmpSize'] as number) <= LIMITS.tmpMb * 1024 * 1024, `/tmp is at most ${String(LIMITS.tmpMb)} MB`)
    t.equal(res['big'], 'written', '7 MB fits')
    // 7 + 12 MB exceed both the 16 MB /tmp and the 8 MB file limit
    t.not(res['bigger'], 'written')
  })

  t.test('nothing is left between two executions: /tmp, /dev/shm, processes, module globals', async (t) => {
    const b = await box(t)
    const first = (await ok(
      b,
      [
        'import os, time, json',
        'def handler(i, c):',
        '    open("/tmp/leak", "w").write("secret")',
        '    open("/dev/shm/leak", "w").write("secret")',
        '    os.mkdir("/tmp/dir")',
        '    json.leaked = "secret"',
        '    pid = os.fork()',
        '    if pid == 0:',
        '        os.setsid()',
        '        time.sleep(60)',
        '        os._exit(0)',
        '    return pid',
      ].join('\n') + '\n',
    )) as number
    t.ok(first > 1)
    const second = (await ok(
      b,
      [
        'import os, json',
        'def handler(i, c):',
        '    pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())',
        '    return {"tmp": os.listdir("/tmp"), "shm": os.listdir("/dev/shm"), "json": hasattr(json, "leaked"), "others": [p for p in pids if p not in (1, os.getppid(), os.getpid())], "old": os.path.exists("/proc/%d" % i)}',
      ].join('\n') + '\n',
      first,
    )) as Record<string, unknown>
    t.same(second['tmp'], [])
    t.same(second['shm'], [])
    t.equal(second['json'], false)
    t.equal(second['old'], false, 'the background process of the first execution is gone')
    t.same(second['others'], [], 'only the init, the runner and this execution')
  })

  t.test('environment: nothing of the platform', async (t) => {
    process.env['PLATFORM_TEST_SECRET'] = 'must-not-leak'
    t.teardown(() => delete process.env['PLATFORM_TEST_SECRET'])
    const b = await box(t)
    const env = (await ok(b, 'import os\ndef handler(i, c):\n    return dict(os.environ)\n')) as Record<string, string>
    // what Python needs, plus what the engine itself sets (podman: container, TERM, HOSTNAME)
    const allowed = new Set(['PATH', 'HOME', 'LANG', 'PYTHONDONTWRITEBYTECODE', 'HOSTNAME', 'TERM', 'container'])
    t.same(
      Object.keys(env).filter((k) => !allowed.has(k)),
      [],
    )
    t.equal(env['HOME'], '/tmp')
  })

  t.test('privileges: uid 65534, no capabilities, NoNewPrivs, seccomp', async (t) => {
    const b = await box(t)
    const st = (await ok(
      b,
      'import os\ndef handler(i, c):\n    s = dict(l.split(":\\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\\t" in l)\n    return {"uid": os.getuid(), "gid": os.getgid(), "eff": s["CapEff"].strip(), "bnd": s["CapBnd"].strip(), "nnp": s["NoNewPrivs"].strip(), "seccomp": s["Seccomp"].strip()}\n',
    )) as Record<string, string | number>
    t.equal(st['uid'], 65534)
    t.equal(st['gid'], 65534)
    const eff = BigInt(`0x${String(st['eff'])}`)
    const bnd = BigInt(`0x${String(st['bnd'])}`)
    const CAP = { NET_ADMIN: 12n, NET_RAW: 13n, SYS_ADMIN: 21n, SYS_PTRACE: 19n }
    for (const c of ['SYS_ADMIN', 'NET_ADMIN', 'NET_RAW', 'SYS_PTRACE'] as const)
      t.equal(eff & (1n << CAP[c]), 0n, `no CAP_${c}`)
    t.equal(eff, 0n, 'no effective capability')
    t.equal(bnd, 0n, 'an empty bounding set (the policy allows CHOWN, SETUID, SETGID at most)')
    t.equal(st['nnp'], '1')
    t.equal(st['seccomp'], '2', "the engine's seccomp filter")
  })

  t.test('the function cannot become root; with CHOWN, SETUID and SETGID added back, podman lets it', async (t) => {
    const b = await box(t)
    const r = await b.run(SETUID_PROBE)
    t.same(r.ok ? r.result : r.error, { eff: '0000000000000000', bnd: '0000000000000000', setuid: 'PermissionError' })
    // capAdd CHOWN, SETUID, SETGID: inert on Docker for a non-root user, ambient (effective) on podman
    const spec = dockerDriver({ socketPath: svc.socketPath, image: svc.image, capAdd: ['CHOWN', 'SETUID', 'SETGID'] })
    const sb = await spec.start({ id: `${prefix}${String(n++)}`, mode: 'exclusive', limits: LIMITS, network: false })
    t.teardown(() => sb.destroy())
    const ch = openChannel(sb)
    await ch.ready
    const d = await ch.exec({ code: SETUID_PROBE, entrypoint: 'handler', input: null, context: {}, timeoutMs: 5000 })
    t.equal(
      d.ok ? (d.result as Record<string, string>)['bnd'] : '',
      '00000000000000c1',
      'bounding set CHOWN|SETGID|SETUID',
    )
    t.comment(`capAdd CHOWN, SETUID, SETGID on this engine: ${JSON.stringify(d.ok ? d.result : d.error)}`)
  })

  t.test("uidBase: one uid per sandbox, so idle sandboxes do not use up a function's process limit", async (t) => {
    const own = dockerDriver({ socketPath: svc.socketPath, image: svc.image, uidBase: 300_000 })
    const boxes = await Promise.all(
      Array.from({ length: 12 }, async () => {
        const sb = await own.start({ id: `${prefix}${String(n++)}`, mode: 'exclusive', limits: LIMITS, network: false })
        t.teardown(() => sb.destroy())
        const ch = openChannel(sb)
        await ch.ready
        return ch
      }),
    )
    const forks =
      'import os, time\ndef handler(i, c):\n    n = 0\n    try:\n        for _ in range(20):\n            if os.fork() == 0:\n                time.sleep(2)\n                os._exit(0)\n            n += 1\n    except OSError:\n        pass\n    return {"forked": n, "uid": os.getuid()}\n'
    const r = await boxes[0]?.exec({ code: forks, entrypoint: 'handler', input: null, context: {}, timeoutMs: 10_000 })
    const res = (r?.ok === true ? r.result : r) as Record<string, unknown>
    t.equal(res['forked'], 20, '20 processes while 11 other sandboxes idle')
    t.ok((res['uid'] as number) >= 300_000)
    const uids = await Promise.all(
      boxes.slice(1, 3).map(async (ch) => {
        const x = await ch.exec({
          code: 'import os\ndef handler(i, c):\n    return os.getuid()\n',
          entrypoint: 'handler',
          input: null,
          context: {},
          timeoutMs: 5000,
        })
        return x.ok ? x.result : null
      }),
    )
    t.equal(new Set([res['uid'], ...uids]).size, 3, 'different uids')
  })

  t.test('processes: a fork bomb is bounded, the sandbox survives', async (t) => {
    const b = await box(t)
    const res = (await ok(
      b,
      'import os, time\ndef handler(i, c):\n    n = 0\n    try:\n        for _ in range(500):\n            if os.fork() == 0:\n                time.sleep(30)\n                os._exit(0)\n            n += 1\n    except OSError as e:\n        return {"forked": n, "error": e.strerror}\n    return {"forked": n}\n',
    )) as Record<string, unknown>
    t.ok(
      (res['forked'] as number) < LIMITS.maxProcs,
      `stopped below ${String(LIMITS.maxProcs)} processes (${String(res['forked'])})`,
    )
    t.ok(typeof res['error'] === 'string')
    t.same(
      await ok(
        b,
        'import os\ndef handler(i, c):\n    return [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getppid(), os.getpid())]\n',
      ),
      [],
      'the forked processes were killed',
    )
  })

  t.test('packages: the directory is mounted read-only and importable', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'platform-pkgs-'))
    // mkdtemp makes it 0700: the sandbox's uid must be able to read it
    chmodSync(dir, 0o755)
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    mkdirSync(join(dir, 'greet'), { mode: 0o755 })
    writeFileSync(join(dir, 'greet', '__init__.py'), 'def hi(n):\n    return "hi " + n\n', { mode: 0o644 })
    const b = await box(t, { packagesDir: dir })
    const res = await ok(
      b,
      'import greet\ndef handler(i, c):\n    try:\n        open("/packages/x", "w")\n        w = "written"\n    except OSError as e:\n        w = e.strerror\n    return [greet.hi(i), w]\n',
      'there',
    )
    t.same(res, ['hi there', 'Read-only file system'])
  })

  t.test('several sandboxes at once are independent', async (t) => {
    const [a, b] = await Promise.all([box(t), box(t)])
    await ok(a, 'def handler(i, c):\n    open("/tmp/mine", "w").write("a")\n    return 1\n')
    const seen = await ok(b, 'import os\ndef handler(i, c):\n    return os.listdir("/tmp")\n')
    t.same(seen, [])
    const [ra, rb] = await Promise.all([
      ok(a, 'def handler(i, c):\n    return "a"\n'),
      ok(b, 'def handler(i, c):\n    return "b"\n'),
    ])
    t.same([ra, rb], ['a', 'b'])
  })

  t.test('the image can also be imported through the Engine API (Docker or podman)', async (t) => {
    const tag = `localhost/platform-sandbox-apitest:${String(process.pid)}`
    t.teardown(() =>
      docker
        .getImage(tag)
        .remove({ force: true })
        .catch(() => undefined),
    )
    const logged: object[] = []
    t.equal(await ensureSandboxImage({ docker, tag, log: { info: (o) => logged.push(o) } }), tag)
    t.equal(logged.length, 1, 'imported')
    const info = await docker.getImage(tag).inspect()
    t.ok(info.RepoTags?.includes(tag))
    // present now: not imported again
    t.equal(await ensureSandboxImage({ docker, tag, log: { info: (o) => logged.push(o) } }), tag)
    t.equal(logged.length, 1)
    const other = dockerDriver({ socketPath: svc.socketPath, image: tag })
    t.same(await other.check(), { ok: true })
    const sb = await other.start({ id: `${prefix}${String(n++)}`, mode: 'exclusive', limits: LIMITS, network: false })
    t.teardown(() => sb.destroy())
    const ch = openChannel(sb)
    await ch.ready
    const r = await ch.exec({
      code: 'def handler(i, c):\n    return "from the API-imported image"\n',
      entrypoint: 'handler',
      input: null,
      context: {},
      timeoutMs: 5000,
    })
    t.same(r.ok ? r.result : r.error, 'from the API-imported image')
  })

  t.test('destroy: idempotent, exited resolves, the container is removed', async (t) => {
    const b = await box(t)
    await Promise.all([b.sb.destroy(), b.sb.destroy()])
    await b.sb.destroy()
    const exit = await b.sb.exited
    t.ok(exit.code !== undefined)
    await t.rejects(
      docker.getContainer(b.sb.name).inspect(),
      { message: /no such container/i, statusCode: 404 },
      'the container is gone',
    )
    t.equal(b.ch.broken, true)
    await t.rejects(b.run('def handler(i, c):\n    return 1\n'), { name: 'SandboxBroken' })
  })

  t.test('a container killed from outside: exited resolves, the channel breaks', async (t) => {
    const b = await box(t)
    await docker.getContainer(b.sb.name).kill({ signal: 'SIGKILL' })
    const exit = await b.sb.exited
    t.ok(exit.signal === 'SIGKILL' || exit.code !== 0, `exit ${JSON.stringify(exit)}`)
    await t.rejects(b.run('def handler(i, c):\n    return 1\n'), { name: 'SandboxBroken' })
    await b.sb.destroy()
  })

  t.test('a stale container of the same name is replaced', async (t) => {
    const spec: SandboxSpec = { id: `${prefix}stale`, mode: 'exclusive', limits: LIMITS, network: false }
    const first = await driver.start(spec)
    const second = await driver.start(spec)
    t.teardown(() => second.destroy())
    const ch = openChannel(second)
    await ch.ready
    t.equal((await first.exited).signal !== undefined, true)
    await first.destroy()
    const r = await ch.exec({
      code: 'def handler(i, c):\n    return 5\n',
      entrypoint: 'handler',
      input: null,
      context: {},
      timeoutMs: 5000,
    })
    t.same(r.ok ? r.result : r.error, 5)
  })

  t.test('the platform with SANDBOX_DRIVER=docker runs functions in containers', async (t) => {
    const env = await startTestPlatform(t, {
      SANDBOX_DRIVER: 'docker',
      DOCKER_HOST: `unix://${svc.socketPath}`,
      SANDBOX_IMAGE: svc.image,
      SANDBOX_MIN_SIZE: '1',
      SANDBOX_MIN_IDLE: '1',
    })
    const created = await env.request('POST', '/api/v1/functions', {
      body: {
        namespace: 'dk',
        name: 'where',
        code: 'import os\ndef handler(input, context):\n    return {"uid": os.getuid(), "twice": input * 2}\n',
      },
    })
    t.equal(created.status, 201, created.text)
    const r = await env.request('POST', '/functions/dk/where/execute', { body: { input: 4 } })
    t.match(r.body, { status: 'success', result: { twice: 8 } }, r.text)
    const stats = (await env.request('GET', '/api/v1/containers/stats')).body as {
      nodes: { driver: string; names: string[] }[]
    }
    t.equal(stats.nodes[0]?.driver, 'docker')
    t.ok(
      stats.nodes[0]?.names.every((n) => n.startsWith('platform-sbx-')),
      'the pool holds containers',
    )
  })

  // the root test ends once the queued subtests are done, so its teardowns (stopping podman) run
  // even though the podman service and the engine connections keep the event loop busy
  t.end()
}
