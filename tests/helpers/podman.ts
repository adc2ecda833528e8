import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Docker from 'dockerode'
import { ensureSandboxImage } from '../../sandbox/image.ts'

/*
 * A real Docker Engine API for the docker driver's tests: `podman system service` as a child
 * process of the test file, on a socket of its own.
 *
 * Podman here (Debian 12, podman 4.3, cgroup v1, no systemd) works only with a containers.conf of
 * our own (pointed to by CONTAINERS_CONF): runc instead of crun, cgroupfs instead of systemd,
 * events to a file instead of journald, no default ulimits (the driver sets nofile/nproc itself).
 * Storage (graph root and run root) is private to the tests and stable under `.tap/podman`, so the
 * sandbox image, content-addressed by runner.py, is imported once and reused by every test file
 * and run; each test file starts its own service on that storage (podman locks it).
 */

interface Teardown {
  teardown(fn: () => unknown): void
}

const REPO = join(import.meta.dirname, '..', '..')
export const PODMAN_DIR = join(REPO, '.tap', 'podman')

export interface PodmanService {
  /** Unix socket serving the Docker Engine API. */
  socketPath: string
  /** The sandbox image (imported when missing). */
  image: string
  /** Global flags for the podman CLI on this storage (`--root`, `--runroot`, ...). */
  podmanArgs: string[]
  /** Environment for the podman CLI (CONTAINERS_CONF). */
  env: NodeJS.ProcessEnv
  /** Force-removes containers whose name starts with `prefix` (left over by a failed test). */
  removeContainers(prefix: string): Promise<number>
  stop(): Promise<void>
}

function has(cmd: string): boolean {
  return spawnSync(cmd, ['--version'], { stdio: 'ignore' }).status === 0
}

/**
 * Makes sure podman, runc and catatonit are installed: as root, installs the missing ones from Debian.
 * Returns a reason when they are missing and cannot be installed (the caller skips).
 */
export function ensurePodman(): string | null {
  // catatonit: podman's init for containers created with Init (the driver's default)
  const missing = [
    ['podman', 'podman'],
    ['runc', 'runc'],
    ['catatonit', 'catatonit'],
  ]
    .filter(([cmd]) => !has(cmd ?? ''))
    .map(([, pkg]) => pkg ?? '')
  if (missing.length === 0) return null
  if (process.getuid?.() !== 0) return `${missing.join(', ')} not installed (Debian packages; install as root)`
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  const r = spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
    timeout: 300_000,
  })
  if (r.status !== 0) {
    spawnSync('apt-get', ['update', '-qq'], { env, stdio: 'ignore', timeout: 300_000 })
    const again = spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], {
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 300_000,
    })
    if (again.status !== 0)
      return `apt-get install ${missing.join(' ')} failed: ${again.stderr.toString().trim().slice(-500)}`
  }
  return null
}

/** Writes the private containers.conf and returns the podman CLI flags and environment for this storage. */
export function podmanConfig(dir = PODMAN_DIR): { podmanArgs: string[]; env: NodeJS.ProcessEnv } {
  mkdirSync(dir, { recursive: true })
  const conf = join(dir, 'containers.conf')
  writeFileSync(
    conf,
    [
      '[containers]',
      'default_ulimits = []',
      '',
      '[engine]',
      'cgroup_manager = "cgroupfs"',
      'runtime = "runc"',
      'events_logger = "file"',
      `events_logfile_path = "${join(dir, 'events.log')}"`,
      `tmp_dir = "${join(dir, 'libpod-tmp')}"`,
      '',
    ].join('\n'),
  )
  return {
    podmanArgs: ['--root', join(dir, 'storage'), '--runroot', join(dir, 'run'), '--storage-driver', 'overlay'],
    env: { ...process.env, CONTAINERS_CONF: conf },
  }
}

async function waitForApi(
  docker: Docker,
  child: ChildProcess,
  socketPath: string,
  stderr: () => string,
): Promise<void> {
  const deadline = Date.now() + 30_000
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`podman system service exited (${String(child.exitCode ?? child.signalCode)}): ${stderr()}`)
    if (existsSync(socketPath)) {
      try {
        await docker.ping()
        return
      } catch {
        // not listening yet
      }
    }
    if (Date.now() > deadline)
      throw new Error(`podman system service did not answer on ${socketPath} within 30 s: ${stderr()}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/**
 * Sandboxes left in the shared storage by a test run that was killed before its teardown: stopped
 * ones older than 5 minutes, running ones older than an hour (a live run's are younger).
 */
async function removeStale(docker: Docker): Promise<number> {
  const now = Date.now() / 1000
  const list = await docker.listContainers({ all: true, filters: { label: ['platform.sandbox'] } })
  const stale = list.filter((c) => now - c.Created > (c.State === 'running' ? 3600 : 300))
  await Promise.all(
    stale.map((c) =>
      docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => undefined),
    ),
  )
  return stale.length
}

/** Sandbox images of earlier runner versions (40 MB each) in the test storage; in use ones stay. */
async function removeOldImages(docker: Docker, current: string): Promise<number> {
  const repo = current.slice(0, current.lastIndexOf(':') + 1)
  const old = (await docker.listImages())
    .flatMap((i) => i.RepoTags ?? [])
    .filter((tag) => tag.startsWith(repo) && tag !== current)
  await Promise.all(
    old.map((tag) =>
      docker
        .getImage(tag)
        .remove()
        .catch(() => undefined),
    ),
  )
  return old.length
}

/**
 * Starts `podman system service` on `<socketDir>/podman.sock` and imports the sandbox image when
 * missing; stopped (and the containers named `platform-sbx-<prefix>…` removed) at teardown.
 */
export async function startPodmanService(
  t: Teardown,
  o: { socketDir: string; containerPrefix?: string },
): Promise<PodmanService> {
  const { podmanArgs, env } = podmanConfig()
  const socketPath = join(o.socketDir, 'podman.sock')
  mkdirSync(o.socketDir, { recursive: true })
  const image = await ensureSandboxImage({ podmanArgs, env, log: { info: () => undefined } })
  // cwd: conmon drops an `oom` marker file into its working directory when a container hits its
  // memory limit (the memory-bomb tests); it belongs in the test's temporary directory, not the checkout
  const child = spawn('podman', [...podmanArgs, 'system', 'service', '--time=0', `unix://${socketPath}`], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
    cwd: o.socketDir,
  })
  let err = ''
  child.stderr.on('data', (d: Buffer) => {
    if (err.length < 8192) err += d.toString('utf8')
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const docker = new Docker({ socketPath })

  async function removeContainers(prefix: string): Promise<number> {
    const list = await docker.listContainers({ all: true, filters: { label: ['platform.sandbox'] } })
    const mine = list.filter((c) => c.Names.some((n) => n.replace(/^\//, '').startsWith(`platform-sbx-${prefix}`)))
    await Promise.all(
      mine.map((c) =>
        docker
          .getContainer(c.Id)
          .remove({ force: true })
          .catch(() => undefined),
      ),
    )
    return mine.length
  }

  let stopping: Promise<void> | null = null
  function stop(): Promise<void> {
    stopping ??= (async () => {
      if (o.containerPrefix !== undefined && child.exitCode === null)
        await removeContainers(o.containerPrefix).catch(() => 0)
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM')
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
        await exited
        clearTimeout(timer)
      }
    })()
    return stopping
  }
  t.teardown(stop)
  await waitForApi(docker, child, socketPath, () => err)
  await removeStale(docker).catch(() => 0)
  await removeOldImages(docker, image).catch(() => 0)
  return { socketPath, image, podmanArgs, env, removeContainers, stop }
}
