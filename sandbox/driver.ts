import type { Readable, Writable } from 'node:stream'

/*
 * The one interface every sandbox driver implements (bubblewrap, Docker Engine API, Kubernetes
 * pods). A driver only starts and destroys an isolated process running the Python runner
 * (`sandbox/runner/runner.py`) and hands back its stdin/stdout; the framed protocol on those pipes
 * (`channel.ts`), pooling (`pool.ts`) and execution are shared, so the conformance suite
 * (`tests/sandbox/conformance.ts`) runs unchanged against each driver.
 */

export interface SandboxLimits {
  /** Address-space / cgroup memory limit of the whole sandbox, MB (MAX_FUNCTION_MEMORY). */
  memoryMb: number
  /** CPU cores (MAX_FUNCTION_CPU); drivers without a CPU controller enforce CPU time only. */
  cpus: number
  /** Size of the in-memory /tmp, MB (default 100). */
  tmpMb: number
  /** Largest file a function may write, MB (from MAX_FUNCTION_STORAGE). */
  fileMb: number
  /** Processes (and threads) inside the sandbox. */
  maxProcs: number
  /** Open files per process. */
  maxFiles: number
  /**
   * Size of the in-memory /dev/shm, MB (SANDBOX_SHM_MB; default DEFAULT_SHM_MB). Small on purpose:
   * POSIX semaphores and small shared buffers need it, bulk data belongs in /tmp.
   */
  shmMb?: number
}

export const DEFAULT_SHM_MB = 16

export function shmMbOf(l: SandboxLimits): number {
  return l.shmMb ?? DEFAULT_SHM_MB
}

/**
 * `exclusive`: one execution at a time; between two executions the runner kills every other
 * process and wipes /tmp (a warm sandbox never leaks one execution into the next).
 * `shared`: a trusted long-lived worker running several executions at once (shared_pool functions).
 */
export type RunnerMode = 'exclusive' | 'shared'

export interface SandboxSpec {
  /** Unique id; drivers derive the container/pod name from it (`platform-sbx-<id>`). */
  id: string
  mode: RunnerMode
  limits: SandboxLimits
  /** Network access: false for sandboxes (only a loopback), true for trusted shared workers. */
  network: boolean
  /**
   * The sandbox runs one execution and is destroyed after it (SANDBOX_EXECUTOR=single_use): the
   * runner (`--single-use`) runs it in its own process, without forking, and leaves the time limit
   * to the platform (`RunnerChannel.execOnce`). Exclusive mode only.
   */
  singleUse?: boolean
  /**
   * Host directory of approved Python packages (pip --target), mounted read-only and put on
   * sys.path by the runner. Absent when no package is installed.
   */
  packagesDir?: string
}

export interface SandboxExit {
  code: number | null
  signal: string | null
}

/** A started sandbox whose runner speaks the framed protocol on `stdin`/`stdout`. */
export interface SandboxProcess {
  readonly id: string
  /** The name operators see (container name, pod name, or `bwrap-<id>`). */
  readonly name: string
  /** Host pid of the sandbox's outer process, for drivers that start one here (bubblewrap, process). */
  readonly pid?: number | undefined
  readonly stdin: Writable
  readonly stdout: Readable
  /** Resolves when the sandbox is gone, for whatever reason. */
  readonly exited: Promise<SandboxExit>
  /** Destroys the sandbox (SIGKILL / container remove / pod delete); idempotent. */
  destroy(): Promise<void>
}

export interface SandboxDriver {
  readonly name: 'bubblewrap' | 'docker' | 'k8s_pod' | 'process'
  /** Whether the driver can run here; `reason` says what is missing. */
  check(): Promise<{ ok: true } | { ok: false; reason: string }>
  start(spec: SandboxSpec): Promise<SandboxProcess>
  /** Releases driver resources (API connections); sandboxes are destroyed by their owners. */
  close(): Promise<void>
}
