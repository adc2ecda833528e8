import { createHash } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { constants as osConstants, tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough, type Duplex } from 'node:stream'
import Docker from 'dockerode'
import { shmMbOf, type SandboxDriver, type SandboxExit, type SandboxProcess, type SandboxSpec } from '../driver.ts'
import { runnerArgs } from '../runner-path.ts'
import { dockerSeccompProfile } from '../seccomp.ts'

/*
 * SANDBOX_DRIVER=docker: one container per SandboxSpec through the Docker Engine API (dockerode),
 * so it runs against Docker or `podman system service`. The image must hold the runner at
 * /runner/runner.py and a system Python at /usr/bin/python3: `sandbox/image.ts` builds such an
 * image (content-addressed by runner.py) with `podman import`; the runner is baked in, not
 * bind-mounted, so the driver also works against a remote engine.
 *
 * What it isolates: the engine's namespaces (pid, mount, ipc: `private`, uts, network: `none`,
 * only a loopback, unless spec.network), a read-only root filesystem with an in-memory /tmp of
 * `tmpMb` and /dev/shm of `shmMb` (both charged to the container's memory cgroup), uid/gid 65534
 * (or one uid per sandbox with `uidBase`), every capability dropped (see `capAdd`),
 * no-new-privileges, the seccomp profile of `../seccomp.ts` (ptrace, process_vm_*, user
 * namespaces, setns, keyrings, bpf, perf, userfaultfd, io_uring refused), and cgroup limits: memory
 * (no swap), CPU (NanoCpus), processes (PidsLimit). The runner adds its per-execution rlimits as
 * everywhere, and removes IPC objects between executions.
 *
 * The runner runs under the engine's init (Init: true; podman needs catatonit installed) and speaks
 * the framed protocol on the attached stdin/stdout (stdout and stderr arrive multiplexed since there
 * is no TTY).
 */

export interface DockerDriverOptions {
  /** Unix socket of the engine (default /var/run/docker.sock). */
  socketPath?: string
  /** DOCKER_HOST-style address (`unix:///path`, `tcp://host:port`); wins over socketPath. */
  host?: string
  /** Image with /usr/bin/python3 and /runner/runner.py. */
  image: string
  /**
   * First uid of a range giving each sandbox a uid (and gid) of its own: uidBase + n. Without it
   * every sandbox runs as 65534, and since the engine uses no user namespace, RLIMIT_NPROC (which
   * the runner sets to maxProcs per execution) counts the processes of all sandboxes on the host
   * together: with 14 idle sandboxes a function could fork only 4 processes.
   */
  uidBase?: number
  /**
   * Capabilities added back after dropping ALL. Default none. The sandbox policy would allow CHOWN, SETUID and
   * SETGID, but the runner, a non-root user, needs none of them, and engines differ: Docker keeps
   * added capabilities in the bounding set only (inert for uid 65534), while podman ≥ 2.2 also
   * makes them ambient, so the function holds CAP_SETUID, can setuid(0) (host uid 0: no user
   * namespace) and leave a root process the runner cannot kill for the next execution.
   */
  capAdd?: string[]
  /**
   * Where podman finds the seccomp profile: its compat API opens the `seccomp=` value as a path on
   * the engine's host (podman issue #27710), while Docker takes the JSON itself. Default: a file
   * the driver writes under the OS temp directory, which works for a local podman; a remote
   * podman needs the profile (`dockerSeccompProfile()`) at a path of its own host.
   */
  seccompProfilePath?: string
}

export const SANDBOX_LABEL = 'platform.sandbox'

function connect(o: DockerDriverOptions): Docker {
  const host = o.host ?? ''
  if (host.startsWith('unix://')) return new Docker({ socketPath: host.slice('unix://'.length) })
  if (host.startsWith('tcp://') || host.startsWith('http://') || host.startsWith('https://')) {
    const u = new URL(host.replace(/^tcp:/, 'http:'))
    return new Docker({
      host: u.hostname,
      port: Number(u.port || 2375),
      protocol: u.protocol === 'https:' ? 'https' : 'http',
    })
  }
  if (host !== '') return new Docker({ socketPath: host })
  return new Docker({ socketPath: o.socketPath ?? '/var/run/docker.sock' })
}

function statusOf(err: unknown): number | undefined {
  const code = (err as { statusCode?: unknown } | null)?.statusCode
  return typeof code === 'number' ? code : undefined
}

function messageOf(err: unknown): string {
  const e = err as { json?: { message?: unknown }; message?: unknown } | null
  const m = e?.json?.message ?? e?.message
  return typeof m === 'string' ? m : String(err)
}

/** Docker reports a signal death as 128 + signal number. */
function exitOf(status: unknown): SandboxExit {
  if (typeof status !== 'number') return { code: null, signal: null }
  if (status > 128 && status < 128 + 65) {
    const name = Object.entries(osConstants.signals).find(([, n]) => n === status - 128)?.[0]
    if (name !== undefined) return { code: null, signal: name }
  }
  return { code: status, signal: null }
}

interface Modem {
  dial(options: Record<string, unknown>, callback: (err: Error | null, stream: Duplex | null) => void): void
  demuxStream(stream: Duplex, stdout: PassThrough, stderr: PassThrough): void
}

/**
 * `container.attach` with an empty body. dockerode also sends the attach options as a JSON body,
 * which podman feeds to the container's stdin (dockerode issue #742): the runner would read
 * `{"stream":true,...}` as a frame length. Same request otherwise: options in the query, hijacked.
 */
function attach(container: Docker.Container): Promise<Duplex> {
  const modem = container.modem as Modem
  return new Promise((resolve, reject) => {
    modem.dial(
      {
        path: `/containers/${container.id}/attach?`,
        method: 'POST',
        isStream: true,
        hijack: true,
        openStdin: true,
        statusCodes: {
          101: true,
          200: true,
          404: 'no such container',
          409: 'container stopped or paused',
          500: 'server error',
        },
        options: { stream: true, stdin: true, stdout: true, stderr: true },
        file: Buffer.alloc(0),
      },
      (err, stream) =>
        err !== null || stream === null ? reject(err ?? new Error('attach returned no stream')) : resolve(stream),
    )
  })
}

export function dockerDriver(o: DockerDriverOptions): SandboxDriver {
  const docker = connect(o)
  let uidCounter = 0
  function nextUser(): string {
    if (o.uidBase === undefined) return '65534:65534'
    const uid = o.uidBase + (uidCounter++ % 50_000)
    return `${String(uid)}:${String(uid)}`
  }

  let seccomp: Promise<string> | null = null
  /** The `seccomp=` security option in the form the engine takes (see seccompProfilePath). */
  function seccompOption(): Promise<string> {
    seccomp ??= (async () => {
      const profile = dockerSeccompProfile()
      const version = await docker.version().catch(() => null)
      const podman = (version?.Components ?? []).some((c) => /podman/i.test(c.Name))
      if (!podman) return `seccomp=${profile}`
      if (o.seccompProfilePath !== undefined) return `seccomp=${o.seccompProfilePath}`
      const dir = join(tmpdir(), `platform-seccomp-${String(process.getuid?.() ?? 0)}`)
      mkdirSync(dir, { recursive: true, mode: 0o755 })
      const file = join(dir, `${createHash('sha256').update(profile).digest('hex').slice(0, 16)}.json`)
      writeFileSync(file, profile, { mode: 0o644 })
      return `seccomp=${file}`
    })()
    // a failed probe is retried by the next start
    seccomp.catch(() => {
      seccomp = null
    })
    return seccomp
  }

  function createOptions(spec: SandboxSpec, seccompOpt: string): Docker.ContainerCreateOptions {
    const l = spec.limits
    const mb = 1024 * 1024
    return {
      name: `platform-sbx-${spec.id}`,
      Image: o.image,
      Entrypoint: [],
      Cmd: [
        '/usr/bin/python3',
        '-I',
        '-S',
        '-B',
        '/runner/runner.py',
        ...runnerArgs(spec, { isolated: true, packagesPath: spec.packagesDir === undefined ? undefined : '/packages' }),
      ],
      User: nextUser(),
      WorkingDir: '/tmp',
      Hostname: 'sandbox',
      // nothing of the platform's environment: only what Python needs
      Env: ['PATH=/usr/bin:/bin', 'HOME=/tmp', 'LANG=C.UTF-8', 'PYTHONDONTWRITEBYTECODE=1'],
      Labels: { [SANDBOX_LABEL]: '1', [`${SANDBOX_LABEL}.id`]: spec.id },
      Tty: false,
      OpenStdin: true,
      StdinOnce: false,
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      HostConfig: {
        AutoRemove: false,
        Memory: l.memoryMb * mb,
        MemorySwap: l.memoryMb * mb,
        NanoCpus: Math.round(l.cpus * 1e9),
        PidsLimit: l.maxProcs,
        ReadonlyRootfs: true,
        Tmpfs: {
          '/tmp': `rw,nosuid,nodev,size=${String(l.tmpMb)}m,mode=1777`,
          // podman mounts writable tmpfs on /run and /var/tmp of a read-only container (its
          // --read-only-tmpfs, not settable through this API): empty read-only ones instead, so
          // /tmp and /dev/shm, which the runner wipes, stay the only writable places
          '/run': 'ro,nosuid,nodev,noexec,size=4k,mode=755',
          '/var/tmp': 'ro,nosuid,nodev,noexec,size=4k,mode=755',
        },
        // a private IPC namespace (never shareable with another container) and a small /dev/shm:
        // the runner empties both between executions; tmpfs pages count against Memory
        IpcMode: 'private',
        ShmSize: shmMbOf(l) * mb,
        CapDrop: ['ALL'],
        CapAdd: o.capAdd ?? [],
        SecurityOpt: ['no-new-privileges', seccompOpt],
        ...(spec.network ? {} : { NetworkMode: 'none' }),
        // Always explicit: podman otherwise copies the host's, which its runtime may not set. nproc
        // counts every process of the uid on the host (all sandboxes share 65534), so it is only a
        // ceiling (podman's service itself runs with 32768); PidsLimit bounds one sandbox.
        Ulimits: [
          { Name: 'nofile', Soft: Math.max(1024, l.maxFiles + 64), Hard: Math.max(1024, l.maxFiles + 64) },
          { Name: 'nproc', Soft: 4096, Hard: 4096 },
        ],
        Binds: spec.packagesDir === undefined ? [] : [`${spec.packagesDir}:/packages:ro`],
        // The engine's init (docker-init; podman: catatonit) as PID 1 reaps orphans (shared mode
        // never cleans up) and lets the runner die like in any other driver: a runner that is
        // itself PID 1 ignores every signal sent from inside, so the pool would not see it broken.
        Init: true,
        Privileged: false,
      },
    }
  }

  async function removeQuietly(c: Docker.Container): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await c.remove({ force: true })
        return
      } catch (err) {
        // 404: already gone; 409: removal already in progress
        const s = statusOf(err)
        if (s === 404 || s === 409) return
        // podman 4.3 fails a forced remove of a container that stops at that moment ("container
        // state improper"); a second try finds it stopped and removes it
        if (attempt >= 4 || s !== 500) throw err
        await new Promise((r) => setTimeout(r, 50 * (attempt + 1)))
      }
    }
  }

  async function create(spec: SandboxSpec): Promise<Docker.Container> {
    const opts = createOptions(spec, await seccompOption())
    try {
      return await docker.createContainer(opts)
    } catch (err) {
      // Docker answers 409 to a name in use, podman 4 answers 500 "... is already in use ..."
      if (statusOf(err) !== 409 && !/already in use/.test(messageOf(err))) throw err
      // a container of that name survived an earlier process: ids are unique, so it is stale
      await removeQuietly(docker.getContainer(opts.name ?? ''))
      return await docker.createContainer(opts)
    }
  }

  return {
    name: 'docker',
    async check() {
      try {
        await docker.ping()
      } catch (err) {
        return {
          ok: false,
          reason: `the Docker Engine API does not answer (${o.host ?? o.socketPath ?? '/var/run/docker.sock'}): ${messageOf(err)}`,
        }
      }
      try {
        await docker.getImage(o.image).inspect()
      } catch (err) {
        return {
          ok: false,
          reason:
            statusOf(err) === 404 ? `image ${o.image} not found` : `cannot inspect image ${o.image}: ${messageOf(err)}`,
        }
      }
      return { ok: true }
    },
    async start(spec: SandboxSpec): Promise<SandboxProcess> {
      const container = await create(spec)
      let stream: Duplex
      try {
        // attach before start, so not a byte of the runner's `ready` frame is missed
        stream = await attach(container)
      } catch (err) {
        await removeQuietly(container)
        throw err
      }
      const stdout = new PassThrough()
      let stderr = ''
      const stderrSink = new PassThrough()
      stderrSink.on('data', (d: Buffer) => {
        if (stderr.length < 4096) stderr += d.toString('utf8')
      })
      ;(container.modem as Modem).demuxStream(stream, stdout, stderrSink)
      stream.on('end', () => stdout.end())
      stream.on('close', () => stdout.end())
      stream.on('error', (err) => stdout.destroy(err))
      try {
        await container.start()
      } catch (err) {
        stream.destroy()
        await removeQuietly(container)
        throw err
      }
      const exited: Promise<SandboxExit> = container.wait().then(
        (r: { StatusCode?: unknown }) => exitOf(r.StatusCode),
        // removed while waiting (destroy) or the engine went away
        () => ({ code: null, signal: 'SIGKILL' }),
      )
      void exited.then(() => stream.destroy())
      let destroying: Promise<void> | null = null
      return {
        id: spec.id,
        name: `platform-sbx-${spec.id}`,
        stdin: stream,
        stdout,
        exited,
        get stderr() {
          return stderr
        },
        destroy() {
          destroying ??= (async () => {
            // remove first: closing the attach stream first would close the runner's stdin and
            // have it exit while the engine kills it
            await removeQuietly(container)
            stream.destroy()
            await exited
          })()
          return destroying
        },
      } as SandboxProcess
    },
    async close() {},
  }
}
