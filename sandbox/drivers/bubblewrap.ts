import { execFile, spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Writable } from 'node:stream'
import { promisify } from 'node:util'
import { shmMbOf, type SandboxDriver, type SandboxExit, type SandboxProcess, type SandboxSpec } from '../driver.ts'
import { runnerArgs, RUNNER_SOURCE } from '../runner-path.ts'
import { seccompProgram } from '../seccomp.ts'

/*
 * The local default driver: one bubblewrap sandbox per SandboxSpec, running the runner with the
 * system Python by absolute path (a pyenv shim costs ~100 ms a start).
 *
 * What it isolates: new user, pid, network (loopback only), ipc, uts, mount and cgroup
 * namespaces; a read-only /usr and nothing else of the host (no /etc, /home, /proc of the host,
 * platform files, sockets or environment: --clearenv); an in-memory /tmp of `tmpMb`; a read-only
 * /dev holding only null, zero, full, random, urandom, tty, pts, an in-memory /dev/shm of
 * `shmMb` and the IPC namespace's /dev/mqueue (so the runner can list and remove queues between
 * executions); no capabilities; no new privileges (bwrap sets PR_SET_NO_NEW_PRIVS); a new session
 * (no TIOCSTI); no further user namespace (--disable-userns, and the seccomp filter of
 * `../seccomp.ts`, which also refuses ptrace, process_vm_*, setns, keyrings, bpf, perf, userfaultfd).
 * As root, each sandbox runs under an outer uid of its own (SANDBOX_UID_BASE + n), so RLIMIT_NPROC
 * bounds exactly that sandbox's processes and its files belong to nobody else. The uid is switched
 * by spawn's own uid/gid (setgroups(0) + setgid + setuid in the forked child, before bwrap is
 * exec'd): from root to another uid that clears the permitted, effective and ambient capabilities,
 * as `setpriv --reuid --regid --clear-groups --inh-caps=-all` did, without a wrapper process to
 * exec on every start (the inheritable set is left as it is: bwrap has no file capabilities, so it
 * grants nothing). Memory, CPU time, file size, open files and processes are rlimits the runner
 * sets per execution.
 *
 * The runner runs precompiled (`runnerFiles`): compiling its source costs every start ~4 ms.
 */

export interface BubblewrapOptions {
  python: string
  bwrap?: string
  /** First outer uid for sandboxes when running as root (0 = do not switch uid). */
  uidBase?: number
}

let uidCounter = 0
const SECCOMP = seccompProgram()

const execFileAsync = promisify(execFile)

/** Writes `data` to `path` atomically (other processes may be starting sandboxes from the same file). */
function writeAtomically(path: string, data: Buffer | string): void {
  const tmp = `${path}.${String(process.pid)}.tmp`
  writeFileSync(tmp, data, { mode: 0o644 })
  chmodSync(tmp, 0o644)
  renameSync(tmp, path)
}

/**
 * A world-readable copy of the runner (sandboxes run under other uids and cannot read the checkout)
 * and, next to it, the runner compiled by the sandbox's own interpreter: `script` is the file to run
 * inside the sandbox (`/runner/…`), the .pyc when compiling worked, else the source. Named by a hash
 * of the source and the interpreter, so processes with different checkouts or Pythons sharing the
 * directory never run each other's half-written or stale file. Compiling runs no runner code.
 */
async function runnerFiles(python: string): Promise<{ dir: string; script: string }> {
  const dir = join(tmpdir(), `platform-runner-${String(process.getuid?.() ?? 0)}`)
  mkdirSync(dir, { recursive: true, mode: 0o755 })
  chmodSync(dir, 0o755)
  const source = readFileSync(RUNNER_SOURCE)
  const st = statSync(python)
  const hash = createHash('sha256')
    .update(source)
    .update(`\0${python}\0${String(st.size)}\0${String(st.mtimeMs)}`)
    .digest('hex')
    .slice(0, 16)
  const py = `runner-${hash}.py`
  const pyc = `runner-${hash}.pyc`
  if (!existsSync(join(dir, py))) writeAtomically(join(dir, py), source)
  if (existsSync(join(dir, pyc))) return { dir, script: `/runner/${pyc}` }
  const tmp = join(dir, `${pyc}.${String(process.pid)}.tmp`)
  try {
    await execFileAsync(
      python,
      [
        '-I',
        '-S',
        '-c',
        'import py_compile, sys\npy_compile.compile(sys.argv[1], cfile=sys.argv[2], dfile="/runner/runner.py", doraise=True, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)',
        join(dir, py),
        tmp,
      ],
      { env: {}, timeout: 30_000 },
    )
    chmodSync(tmp, 0o644)
    renameSync(tmp, join(dir, pyc))
    return { dir, script: `/runner/${pyc}` }
  } catch {
    // the source runs too, only slower to start
    return { dir, script: `/runner/${py}` }
  }
}

export function resolvePython(python: string): string {
  // Resolve symlinks once (/usr/bin/python3 -> python3.11): the path must exist inside the sandbox.
  return realpathSync(python)
}

export function bubblewrapDriver(o: BubblewrapOptions): SandboxDriver {
  const bwrap = o.bwrap ?? '/usr/bin/bwrap'
  const isRoot = process.getuid?.() === 0
  const uidBase = isRoot ? (o.uidBase ?? 200_000) : 0
  let runner: Promise<{ dir: string; script: string }> | null = null
  let python: string | null = null

  return {
    name: 'bubblewrap',
    async check() {
      if (!existsSync(bwrap) && isRoot) {
        // `npm start` brings up what it needs: as root, install bubblewrap from Debian.
        spawnSync('sh', ['-c', 'apt-get update -qq && apt-get install -y -qq --no-install-recommends bubblewrap'], {
          stdio: 'ignore',
          env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
          timeout: 300_000,
        })
      }
      if (!existsSync(bwrap)) return { ok: false, reason: `${bwrap} not found (Debian package bubblewrap)` }
      try {
        python = resolvePython(o.python)
      } catch {
        return { ok: false, reason: `python ${o.python} not found` }
      }
      if (!python.startsWith('/usr/'))
        return {
          ok: false,
          reason: `python ${python} is outside /usr, the only host tree a sandbox sees; set SANDBOX_PYTHON to a system interpreter`,
        }
      const r = spawnSync(
        bwrap,
        [
          '--unshare-all',
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
          python,
          '-I',
          '-S',
          '-c',
          'pass',
        ],
        { timeout: 10_000 },
      )
      if (r.status !== 0)
        return {
          ok: false,
          reason: `bwrap cannot start a sandbox here: ${r.stderr.toString().trim() || String(r.error ?? r.status)}`,
        }
      return { ok: true }
    },
    async start(spec: SandboxSpec): Promise<SandboxProcess> {
      python ??= resolvePython(o.python)
      runner ??= runnerFiles(python)
      const { dir: runnerDir, script } = await runner
      const args = [
        '--unshare-user',
        '--unshare-pid',
        '--unshare-ipc',
        '--unshare-uts',
        '--unshare-cgroup-try',
        ...(spec.network ? [] : ['--unshare-net']),
        '--uid',
        '65534',
        '--gid',
        '65534',
        '--hostname',
        'sandbox',
        '--die-with-parent',
        '--new-session',
        '--cap-drop',
        'ALL',
        '--disable-userns',
        '--assert-userns-disabled',
        // the filter arrives on fd 3 (see spawn below)
        '--seccomp',
        '3',
        '--clearenv',
        '--setenv',
        'PATH',
        '/usr/bin:/bin',
        '--setenv',
        'HOME',
        '/tmp',
        '--setenv',
        'LANG',
        'C.UTF-8',
        '--setenv',
        'PYTHONDONTWRITEBYTECODE',
        '1',
        '--ro-bind',
        '/usr',
        '/usr',
        '--symlink',
        'usr/lib',
        '/lib',
        '--symlink',
        'usr/lib64',
        '/lib64',
        '--symlink',
        'usr/bin',
        '/bin',
        '--proc',
        '/proc',
        // /dev is bwrap's minimal one, then read-only: a writable /dev is a tmpfs of half the RAM
        // that nothing empties. The two writable mounts under it are small or hold only queues.
        '--dev',
        '/dev',
        '--size',
        String(shmMbOf(spec.limits) * 1024 * 1024),
        '--perms',
        '1777',
        '--tmpfs',
        '/dev/shm',
        '--mqueue',
        '/dev/mqueue',
        '--remount-ro',
        '/dev',
        '--size',
        String(spec.limits.tmpMb * 1024 * 1024),
        '--tmpfs',
        '/tmp',
        '--ro-bind',
        runnerDir,
        '/runner',
        ...(spec.packagesDir === undefined ? [] : ['--ro-bind', spec.packagesDir, '/packages']),
        // the root itself is a tmpfs bwrap made: read-only, so only /tmp takes writes
        '--remount-ro',
        '/',
        '--chdir',
        '/tmp',
        python,
        '-I',
        '-S',
        '-B',
        script,
        ...runnerArgs(spec, { isolated: true, packagesPath: spec.packagesDir === undefined ? undefined : '/packages' }),
      ]
      const uid = uidBase > 0 ? uidBase + (uidCounter++ % 50_000) : undefined
      const child = spawn(bwrap, args, {
        stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
        env: {},
        ...(uid === undefined ? {} : { uid, gid: uid }),
      })
      // bwrap reads the program to EOF before it starts the sandbox (a few hundred bytes: the pipe holds them)
      const filterPipe = child.stdio[3] as Writable
      filterPipe.on('error', () => undefined)
      filterPipe.end(SECCOMP)
      let stderr = ''
      child.stderr.on('data', (d: Buffer) => {
        if (stderr.length < 4096) stderr += d.toString('utf8')
      })
      const exited = new Promise<SandboxExit>((resolve) => {
        child.on('exit', (code, signal) => resolve({ code, signal }))
        child.on('error', () => resolve({ code: null, signal: 'spawn-error' }))
      })
      return {
        id: spec.id,
        name: `bwrap-${spec.id}`,
        pid: child.pid,
        stdin: child.stdin,
        stdout: child.stdout,
        exited,
        get stderr() {
          return stderr
        },
        async destroy() {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
          await exited
        },
      } as SandboxProcess
    },
    async close() {},
  }
}
