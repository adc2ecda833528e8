import type { Test } from 'tap'
import type { ExecOutcome, RunnerChannel } from '../../sandbox/channel.ts'
import { shmMbOf, type SandboxLimits } from '../../sandbox/driver.ts'

/*
 * Part of the conformance suite: what one execution in a warm sandbox could leave for the next one
 * or use to reach beyond its own process, one check per leak. Each check plants something in one
 * execution (a SysV segment, queue or semaphore set, a POSIX message queue, a file under /dev) and
 * looks for it in the next, or tries what the sandbox must refuse (filling /dev/shm, ptrace,
 * a user namespace, the kernel keyring, bpf, perf). All of it through ctypes: the runner's
 * Python has no binding for these calls, and the docker image has no shell or tools.
 */
type Run = (ch: RunnerChannel, body: string, input?: unknown, timeoutMs?: number) => Promise<ExecOutcome>

interface Box {
  name: string
  ch: RunnerChannel
  run: Run
  limits: SandboxLimits
}

export interface IsolationOptions {
  name: string
  /** A new sandbox of the driver under test, ready. */
  fresh: () => Promise<RunnerChannel>
  run: Run
  limits: SandboxLimits
}

const PRELUDE = [
  'import ctypes, os, platform',
  'libc = ctypes.CDLL(None, use_errno=True)',
  'def fail():',
  '    return os.strerror(ctypes.get_errno())',
  'def listed(kind):',
  '    try:',
  '        return len(open("/proc/sysvipc/" + kind).read().splitlines()[1:])',
  '    except OSError as e:',
  '        return "unreadable: %s" % e',
]

const result = (r: ExecOutcome): Record<string, unknown> =>
  r.ok ? (r.result as Record<string, unknown>) : { error: r.error }

/** An execution that breaks the sandbox answers with the error instead of throwing. */
async function exec(box: Box, lines: string[]): Promise<Record<string, unknown>> {
  return result(
    await box.run(box.ch, lines.join('\n')).catch((err: unknown): ExecOutcome => ({
      ok: false,
      error: { type: 'Thrown', message: String(err), traceback: '' },
      output: '',
      durationMs: 0,
      timedOut: false,
    })),
  )
}

async function plantThenLook(
  box: Box,
  plant: string[],
  look: string[],
): Promise<{ planted: Record<string, unknown>; seen: Record<string, unknown> }> {
  const planted = await exec(box, [...PRELUDE, ...plant])
  const seen = await exec(box, [...PRELUDE, ...look])
  return { planted, seen }
}

const IPC_CREAT = 0o1000
const EPERM_TEXT = 'Operation not permitted'

export async function runIsolationChecks(t: Test, o: IsolationOptions): Promise<void> {
  const n = o.name
  // a sandbox of their own, started inside a test so that a failed start fails a test
  let box: Box = { ...o, ch: null as unknown as RunnerChannel }
  await t.test(`${n}: a sandbox for the isolation checks starts`, async (t) => {
    box = { ...o, ch: await o.fresh() }
    t.pass('started')
  })

  await t.test(`${n}: a SysV shared memory segment does not outlive its execution`, async (t) => {
    const { planted, seen } = await plantThenLook(
      box,
      [
        'libc.shmat.restype = ctypes.c_void_p',
        `sid = libc.shmget(0x5eed1, 4096, ${String(IPC_CREAT)} | 0o666)`,
        'if sid < 0:',
        '    return {"created": fail()}',
        'addr = libc.shmat(sid, None, 0)',
        'ctypes.memmove(addr, b"card 4242", 9)',
        'return {"created": True}',
      ],
      ['return {"listed": listed("shm"), "by_key": libc.shmget(0x5eed1, 0, 0) >= 0}'],
    )
    t.comment(`run 1: ${JSON.stringify(planted)}`)
    t.same(seen, { listed: 0, by_key: false }, 'no segment in the next execution')
  })

  await t.test(`${n}: a SysV message queue does not outlive its execution`, async (t) => {
    const { planted, seen } = await plantThenLook(
      box,
      [
        `qid = libc.msgget(0x5eed2, ${String(IPC_CREAT)} | 0o666)`,
        'if qid < 0:',
        '    return {"created": fail()}',
        'msg = ctypes.create_string_buffer(b"\\x01\\0\\0\\0\\0\\0\\0\\0card 4242", 17)',
        'return {"created": True, "sent": libc.msgsnd(qid, msg, 9, 0) == 0}',
      ],
      ['return {"listed": listed("msg"), "by_key": libc.msgget(0x5eed2, 0) >= 0}'],
    )
    t.comment(`run 1: ${JSON.stringify(planted)}`)
    t.same(seen, { listed: 0, by_key: false }, 'no message queue in the next execution')
  })

  await t.test(`${n}: a SysV semaphore set does not outlive its execution`, async (t) => {
    const { planted, seen } = await plantThenLook(
      box,
      [
        `sem = libc.semget(0x5eed3, 1, ${String(IPC_CREAT)} | 0o666)`,
        'return {"created": True if sem >= 0 else fail()}',
      ],
      ['return {"listed": listed("sem"), "by_key": libc.semget(0x5eed3, 1, 0) >= 0}'],
    )
    t.comment(`run 1: ${JSON.stringify(planted)}`)
    t.same(seen, { listed: 0, by_key: false }, 'no semaphore set in the next execution')
  })

  await t.test(`${n}: a POSIX message queue does not outlive its execution`, async (t) => {
    const { planted, seen } = await plantThenLook(
      box,
      [
        'fd = libc.mq_open(b"/leak", os.O_CREAT | os.O_RDWR, 0o666, None)',
        'if fd < 0:',
        '    return {"created": fail()}',
        'return {"created": True, "sent": libc.mq_send(fd, b"card 4242", 9, 0) == 0}',
      ],
      ['fd = libc.mq_open(b"/leak", os.O_RDONLY)', 'return {"visible": fd >= 0}'],
    )
    t.comment(`run 1: ${JSON.stringify(planted)}`)
    t.same(seen, { visible: false }, 'the queue is gone in the next execution')
  })

  await t.test(
    `${n}: nothing can be written under /dev, nothing written there reaches the next execution`,
    async (t) => {
      const { planted, seen } = await plantThenLook(
        box,
        [
          'out = {}',
          'for p in ["/dev/leak", "/dev/pts/leak", "/dev/mqueue-leak"]:',
          '    try:',
          '        open(p, "w").write("card 4242")',
          '        out[p] = "written"',
          '    except OSError as e:',
          '        out[p] = "refused"',
          'return out',
        ],
        [
          'return {"left": [p for p in ["/dev/leak", "/dev/pts/leak", "/dev/mqueue-leak", "/dev/shm/leak"] if os.path.exists(p)]}',
        ],
      )
      t.same(
        planted,
        { '/dev/leak': 'refused', '/dev/pts/leak': 'refused', '/dev/mqueue-leak': 'refused' },
        '/dev takes no file',
      )
      t.same(seen, { left: [] }, 'no file under /dev in the next execution')
    },
  )

  await t.test(`${n}: /dev/shm is small and emptied between executions`, async (t) => {
    const cap = shmMbOf(box.limits)
    const { planted, seen } = await plantThenLook(
      box,
      [
        'chunk = b"x" * (1024 * 1024)',
        'written = 0',
        'err = None',
        'try:',
        '    with open("/dev/shm/leak", "wb") as f:',
        '        for i in range(64):',
        '            f.write(chunk)',
        '            f.flush()',
        '            written += 1',
        'except OSError as e:',
        '    err = type(e).__name__',
        'return {"written_mb": written, "error": err}',
      ],
      ['return {"left": os.listdir("/dev/shm") if os.path.isdir("/dev/shm") else []}'],
    )
    t.ok(
      typeof planted['error'] === 'string',
      `writing 64 MB to /dev/shm stops with an error (${JSON.stringify(planted)})`,
    )
    t.ok(Number(planted['written_mb']) <= cap, `at most ${String(cap)} MB written (${String(planted['written_mb'])})`)
    t.same(seen, { left: [] }, '/dev/shm is empty in the next execution')
  })

  await t.test(`${n}: no process of the sandbox can be traced or have its memory read`, async (t) => {
    const v = await exec(box, [
      ...PRELUDE,
      'out = {}',
      'for name, pid in (("init", 1), ("runner", os.getppid())):',
      '    if libc.ptrace(16, pid, None, None) == 0:',
      '        out[name] = "attached"',
      '        os.waitpid(pid, 0x40000000)',
      '        libc.ptrace(17, pid, None, None)',
      '    else:',
      '        out[name] = fail()',
      'buf = ctypes.create_string_buffer(16)',
      'local = (ctypes.c_void_p * 2)(ctypes.cast(buf, ctypes.c_void_p), 16)',
      'remote = (ctypes.c_void_p * 2)(0x400000, 16)',
      'nr = {"x86_64": 310, "aarch64": 270}[platform.machine()]',
      'out["vm_read"] = "read" if libc.syscall(ctypes.c_long(nr), ctypes.c_long(1), local, ctypes.c_long(1), remote, ctypes.c_long(1), ctypes.c_long(0)) >= 0 else fail()',
      'return out',
    ])
    t.same(v, { init: EPERM_TEXT, runner: EPERM_TEXT, vm_read: EPERM_TEXT }, 'ptrace and process_vm_readv are refused')
  })

  await t.test(`${n}: no user namespace can be created`, async (t) => {
    const v = await exec(box, [
      ...PRELUDE,
      'CLONE_NEWUSER = 0x10000000',
      'out = {}',
      'nr = {"x86_64": 56, "aarch64": 220}[platform.machine()]',
      // a raw clone without a new stack behaves like fork: the child leaves at once
      'pid = libc.syscall(ctypes.c_long(nr), ctypes.c_long(CLONE_NEWUSER | 17), ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0))',
      'if pid == 0:',
      '    os._exit(0)',
      'if pid > 0:',
      '    os.waitpid(pid, 0)',
      'out["clone"] = "created" if pid > 0 else fail()',
      'out["unshare"] = "created" if libc.unshare(CLONE_NEWUSER) == 0 else fail()',
      'return out',
    ])
    t.not(v['unshare'], 'created', `unshare(CLONE_NEWUSER) fails (${String(v['unshare'])})`)
    t.not(v['clone'], 'created', `clone(CLONE_NEWUSER) fails (${String(v['clone'])})`)
    t.notOk('error' in v, JSON.stringify(v))
  })

  await t.test(`${n}: the kernel keyring, bpf and perf_event_open are refused`, async (t) => {
    const v = await exec(box, [
      ...PRELUDE,
      'import struct',
      'nr = {"x86_64": {"keyctl": 250, "add_key": 248, "request_key": 249, "bpf": 321, "perf_event_open": 298},',
      '      "aarch64": {"keyctl": 219, "add_key": 217, "request_key": 218, "bpf": 280, "perf_event_open": 241}}[platform.machine()]',
      'L = ctypes.c_long',
      'def call(name, *args):',
      '    r = libc.syscall(L(nr[name]), *args)',
      '    if r >= 0 and name in ("bpf", "perf_event_open"):',
      '        os.close(r)',
      '    return "allowed" if r >= 0 else fail()',
      'bpf_attr = ctypes.create_string_buffer(struct.pack("<IIII", 2, 4, 4, 1), 72)',
      // a software clock of this process, user space only: what perf_event_paranoid 2 allows
      'perf_attr = ctypes.create_string_buffer(struct.pack("<IIQQQQQ", 1, 64, 0, 0, 0, 0, (1 << 5) | (1 << 6)), 64)',
      'return {',
      '    "keyctl": call("keyctl", L(0), L(-3), L(1)),',
      '    "add_key": call("add_key", b"user", b"leak", b"card", L(4), L(-4)),',
      '    "request_key": call("request_key", b"user", b"leak", None, L(0)),',
      '    "bpf": call("bpf", L(0), bpf_attr, L(72)),',
      '    "perf_event_open": call("perf_event_open", perf_attr, L(0), L(-1), L(-1), L(0)),',
      '}',
    ])
    t.same(
      v,
      {
        keyctl: EPERM_TEXT,
        add_key: EPERM_TEXT,
        request_key: EPERM_TEXT,
        bpf: EPERM_TEXT,
        perf_event_open: EPERM_TEXT,
      },
      'each is refused with EPERM',
    )
  })
}
