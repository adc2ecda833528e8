import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { createServer, connect } from 'node:net'
import { dirname, join, resolve } from 'node:path'
import type { Logger } from '../kernel/log.ts'
import { ensureCurrentNatsServer, pickNatsServer, type NatsServerChoice } from './nats-server-binary.ts'

/*
 * Single-node mode: nats-server (JetStream) and a Postgres cluster as child processes with their
 * data in one directory. Used by `npm start` when NATS_URL / DATABASE_URL are unset, and by the test
 * suite's setup. Postgres refuses to run as root, so as root the cluster belongs to the `postgres`
 * user and its processes are started through `setpriv` (which execs, so signals reach postgres
 * itself and nothing stays behind).
 */

export interface LocalService {
  url: string
  /**
   * The same server over its Unix socket (Postgres in a cluster directory short enough for a
   * socket path): what the platform's own pool uses. A query over the socket costs less CPU on
   * both ends than over loopback TCP (bench/findings-log.md); `url` stays TCP for everything else.
   */
  socketUrl?: string
  pid: number
  stop(): Promise<void>
  /** Settles when the server process ends, stopped or not (how it ended); absent for detached servers. */
  exited?: Promise<string>
  /** Sends the stop signal without waiting (a forced exit must not leave the server behind). */
  signal?: () => void
}

const isRoot = (): boolean => process.getuid?.() === 0
const AS_POSTGRES = ['--reuid=postgres', '--regid=postgres', '--init-groups', '--']

/**
 * The nats-server binary to start: NATS_SERVER_BIN, else a current one (v2.15.3 or newer: PATH, the
 * data directory's bin/, the machine cache), else any installed (Debian's). See nats-server-binary.ts.
 */
export function findNatsServer(options: NatsServerChoice = {}): string | undefined {
  return pickNatsServer(options)?.bin
}

export function findPostgresBin(): string | undefined {
  const root = '/usr/lib/postgresql'
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a))
    if (versions[0] !== undefined) return join(root, versions[0], 'bin')
  }
  const which = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' })
  return which.status === 0 ? join(which.stdout.trim(), '..') : undefined
}

export const APT_PACKAGES = ['nats-server', 'postgresql'] as const
export const APT_COMMAND = `apt-get update && apt-get install -y --no-install-recommends ${APT_PACKAGES.join(' ')}`

/**
 * Makes the servers single-node mode starts available: a current nats-server built with Go when
 * there is none (`buildNats: false` skips it, for a process that only needs Postgres), then nats-server
 * and Postgres from Debian when still missing and we are root; otherwise says how.
 */
export function ensureServerPackages(log: Logger, options: NatsServerChoice & { buildNats?: boolean } = {}): void {
  if (options.buildNats !== false) ensureCurrentNatsServer({ ...options, log })
  const missing = [
    findNatsServer(options) === undefined ? 'nats-server' : '',
    findPostgresBin() === undefined ? 'postgresql' : '',
  ].filter(Boolean)
  if (missing.length === 0) return
  if (!isRoot()) {
    throw new Error(
      `missing ${missing.join(' and ')}: run\n  sudo sh -c '${APT_COMMAND}'\nor set NATS_URL and DATABASE_URL to existing servers`,
    )
  }
  log.info({ missing }, 'installing Debian packages')
  const r = spawnSync('sh', ['-c', APT_COMMAND], {
    stdio: 'inherit',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  })
  if (r.status !== 0 || findNatsServer(options) === undefined || findPostgresBin() === undefined) {
    throw new Error(`installing ${missing.join(', ')} failed (exit ${String(r.status)})`)
  }
}

export async function freePort(preferred?: number): Promise<number> {
  const tryPort = (port: number) =>
    new Promise<number>((resolve, reject) => {
      const srv = createServer()
      srv.once('error', reject)
      srv.listen(port, '127.0.0.1', () => {
        const addr = srv.address()
        const p = typeof addr === 'object' && addr !== null ? addr.port : port
        srv.close(() => resolve(p))
      })
    })
  if (preferred !== undefined) {
    try {
      return await tryPort(preferred)
    } catch {
      /* taken: fall through to any free port */
    }
  }
  return tryPort(0)
}

/** Resolves once `port` on `host` accepts a connection; fails when `child` exits first or after `timeoutMs`. */
export async function waitForPort(
  port: number,
  child: ChildProcess,
  what: string,
  timeoutMs = 30_000,
  host = '127.0.0.1',
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`${what} exited (${String(child.exitCode ?? child.signalCode)}) during start`)
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, host)
      s.once('connect', () => {
        s.destroy()
        resolve(true)
      })
      s.once('error', () => resolve(false))
    })
    if (ok) return
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`${what} did not listen on ${host}:${String(port)} within ${String(timeoutMs)} ms`)
}

/** How a child ended, once it has: `code 0`, `signal SIGKILL`. */
function exitOf(child: ChildProcess): Promise<string> {
  const describe = () => (child.signalCode !== null ? `signal ${child.signalCode}` : `code ${String(child.exitCode)}`)
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(describe())
  return new Promise((resolve) => child.once('exit', () => resolve(describe())))
}

function signalChild(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.exitCode === null && child.signalCode === null) child.kill(signal)
}

function stopChild(child: ChildProcess, signal: NodeJS.Signals, timeoutMs = 15_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.once('exit', () => {
      clearTimeout(timer)
      resolve()
    })
    child.kill(signal)
  })
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Stops a process left by an earlier run that died without stopping its children (kill -9). */
async function killStale(pidFile: string, log: Logger): Promise<void> {
  if (!existsSync(pidFile)) return
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0])
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return
  log.warn({ pid, pidFile }, 'stopping a server left running by an earlier start')
  await stopByPid(pid, 'SIGTERM', 10_000)
}

/**
 * The servers this process started and still owns (not detached), from the moment they are spawned:
 * a process that ends on a signal stops them with `stopLocalServers` even when the signal came
 * while one was still starting (they run in their own process group, so the signal never reaches
 * them).
 */
const owned = new Set<ChildProcess>()

/** Stops every server this process started and still owns (SIGTERM, SIGKILL after 5 s). */
export async function stopLocalServers(): Promise<void> {
  await Promise.all([...owned].map((child) => stopChild(child, 'SIGTERM', 5_000)))
}

/** The last resort of an exiting process: SIGTERM to every server it still owns, without waiting. */
export function signalLocalServers(): void {
  for (const child of owned) signalChild(child, 'SIGTERM')
}

function spawnServer(cmd: string, args: string[], detach: boolean, log: Logger): ChildProcess {
  if (detach) {
    const child = spawn(cmd, args, { stdio: 'ignore', cwd: '/', detached: true })
    child.unref()
    return child
  }
  // Its own process group: Ctrl-C in a terminal signals the whole foreground group, and the servers
  // must outlive the platform's own shutdown (NATS drained, Postgres pool ended) instead of dying
  // under it; stop() ends them last. Not unref'd: they still belong to this process.
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: '/', detached: true })
  owned.add(child)
  child.once('exit', () => owned.delete(child))
  pipeLogs(child, log)
  return child
}

/** Stops a server started with `detach` by an earlier process. */
export async function stopByPid(pid: number, signal: NodeJS.Signals, timeoutMs = 15_000): Promise<void> {
  if (!isAlive(pid)) return
  process.kill(pid, signal)
  const deadline = Date.now() + timeoutMs
  while (isAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
  if (isAlive(pid)) process.kill(pid, 'SIGKILL')
}

function pipeLogs(child: ChildProcess, log: Logger): void {
  const forward = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') log.debug(line)
  }
  child.stdout?.on('data', forward)
  child.stderr?.on('data', forward)
}

export interface NatsOptions {
  dir: string
  port?: number
  exactPort?: boolean
  log: Logger
  detach?: boolean
  /** Where to look for the binary besides the defaults (findNatsServer): DATA_DIR, NATS_SERVER_BIN. */
  binary?: NatsServerChoice
  /**
   * nats.conf's `authorization` block (src/platform/nats-credentials.ts): single-node mode always
   * passes one. Only the test suite's shared server runs without, i.e. takes anonymous clients.
   */
  authorization?: string
}

export async function startNats(options: NatsOptions): Promise<LocalService> {
  const pick = pickNatsServer(options.binary)
  if (pick === undefined) throw new Error('nats-server not found')
  const bin = pick.bin
  options.log.info({ bin, version: pick.version, why: pick.why }, 'starting nats-server')
  mkdirSync(options.dir, { recursive: true, mode: 0o700 })
  const pidFile = join(options.dir, 'nats.pid')
  await killStale(pidFile, options.log)
  const port = options.exactPort === true && options.port !== undefined ? options.port : await freePort(options.port)
  // max_payload 8 MB: request bodies travel to the resource service inside one message.
  const conf = join(options.dir, 'nats.conf')
  writeFileSync(
    conf,
    `max_payload: 8388608\njetstream { store_dir: "${join(options.dir, 'jetstream')}" }\n${options.authorization ?? ''}`,
    { mode: 0o600 },
  )
  chmodSync(conf, 0o600)
  const child = spawnServer(
    bin,
    ['-c', conf, '-a', '127.0.0.1', '-p', String(port), '-P', pidFile],
    options.detach === true,
    options.log,
  )
  try {
    await waitForPort(port, child, 'nats-server')
  } catch (err) {
    await stopChild(child, 'SIGTERM', 5_000)
    throw err
  }
  // nats-server ends within a second on SIGTERM; one that does not (stopped, wedged) is killed after 5 s.
  return {
    url: `nats://127.0.0.1:${String(port)}`,
    pid: child.pid ?? 0,
    stop: () => stopChild(child, 'SIGTERM', 5_000),
    ...(options.detach === true ? {} : { exited: exitOf(child), signal: () => signalChild(child, 'SIGTERM') }),
  }
}

export interface PostgresOptions {
  dir: string
  port?: number
  /** Use `port` or fail (a restart must come back where the clients reconnect). */
  exactPort?: boolean
  password: string
  database: string
  log: Logger
  /** Trade durability for speed (test runs only). */
  unsafeFast?: boolean
  /** Keep running after this process exits (test-suite setup); stop it later by pid. */
  detach?: boolean
}

function postgresIds(): { uid: number; gid: number } {
  const uid = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' })
  const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' })
  if (uid.status !== 0) throw new Error('no postgres user: install the postgresql package')
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) }
}

/**
 * As root the cluster runs as `postgres`, which must be able to reach its directory. When a parent
 * of the data directory is closed to it (a clone under /root, a 0700 temp dir), the cluster lives
 * under /var/lib/agent-platform instead, linked from the data directory, so a second start finds it.
 */
function clusterDirForPostgresUser(wanted: string, log: Logger): string {
  if (existsSync(wanted) && lstatSync(wanted).isSymbolicLink()) return realpathSync(wanted)
  mkdirSync(dirname(wanted), { recursive: true })
  const probe = spawnSync('setpriv', [...AS_POSTGRES, 'test', '-x', dirname(wanted)])
  if (probe.status === 0) return wanted
  const elsewhere = join(
    '/var/lib/agent-platform',
    createHash('sha256').update(resolve(wanted)).digest('hex').slice(0, 12),
    'pg',
  )
  mkdirSync(dirname(elsewhere), { recursive: true, mode: 0o755 })
  if (!existsSync(wanted)) symlinkSync(elsewhere, wanted)
  log.info(
    { wanted, dir: elsewhere },
    'data directory not reachable by the postgres user: cluster kept under /var/lib/agent-platform',
  )
  return elsewhere
}

export async function startPostgres(options: PostgresOptions): Promise<LocalService> {
  const bin = findPostgresBin()
  if (bin === undefined) throw new Error('Postgres binaries not found')
  const { log } = options
  const asPostgres = (cmd: string, args: string[]): [string, string[]] =>
    isRoot() ? ['setpriv', [...AS_POSTGRES, cmd, ...args]] : [cmd, args]
  const dir = isRoot() ? clusterDirForPostgresUser(options.dir, log) : options.dir
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const ids = isRoot() ? postgresIds() : undefined
  if (ids !== undefined) chownSync(dir, ids.uid, ids.gid)
  if (!existsSync(join(dir, 'PG_VERSION'))) {
    // The password file must be readable by the postgres user only: /tmp, 0600, chowned.
    const pwfile = join(tmpdir(), `platform-pgpass-${String(process.pid)}-${String(Date.now())}`)
    writeFileSync(pwfile, `${options.password}\n`, { mode: 0o600 })
    if (ids !== undefined) chownSync(pwfile, ids.uid, ids.gid)
    const [cmd, args] = asPostgres(join(bin, 'initdb'), [
      '-D',
      dir,
      '-U',
      'postgres',
      '--auth=scram-sha-256',
      `--pwfile=${pwfile}`,
      '-E',
      'UTF8',
      '--no-instructions',
    ])
    const r = spawnSync(cmd, args, { encoding: 'utf8', cwd: '/' })
    rmSync(pwfile, { force: true })
    if (r.status !== 0) throw new Error(`initdb failed: ${r.stderr}`)
    log.info({ dir }, 'postgres cluster initialised')
  }
  await killStale(join(dir, 'postmaster.pid'), log)
  const port = options.exactPort === true && options.port !== undefined ? options.port : await freePort(options.port)
  // The socket goes in the cluster directory (0700, the postgres user's): only this host's root or
  // the cluster's owner can reach it, and no sandbox mounts it. sun_path holds 107 bytes.
  // (absolute: the server resolves a relative one against its data directory)
  const absDir = resolve(dir)
  const socketDir = `${absDir}/.s.PGSQL.${String(port)}.lock`.length <= 100 ? absDir : null
  const settings = [
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    `unix_socket_directories=${socketDir ?? ''}`,
    '-c',
    'max_connections=200',
  ]
  if (options.unsafeFast === true)
    settings.push('-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off')
  const [cmd, args] = asPostgres(join(bin, 'postgres'), ['-D', dir, '-p', String(port), ...settings])
  const child = spawnServer(cmd, args, options.detach === true, log)
  try {
    await waitForPort(port, child, 'postgres')
  } catch (err) {
    await stopChild(child, 'SIGINT', 5_000)
    throw err
  }
  const base = `postgres://postgres:${encodeURIComponent(options.password)}@127.0.0.1:${String(port)}`
  await ensureDatabase(base, options.database)
  // SIGINT = "fast shutdown": active transactions are rolled back, data is flushed.
  const socketUrl =
    socketDir === null
      ? {}
      : {
          socketUrl: `postgres://postgres:${encodeURIComponent(options.password)}@${encodeURIComponent(socketDir)}:${String(port)}/${options.database}`,
        }
  return {
    url: `${base}/${options.database}`,
    ...socketUrl,
    pid: child.pid ?? 0,
    stop: () => stopChild(child, 'SIGINT'),
    ...(options.detach === true ? {} : { exited: exitOf(child), signal: () => signalChild(child, 'SIGINT') }),
  }
}

async function ensureDatabase(baseUrl: string, database: string): Promise<void> {
  const { default: pg } = await import('pg')
  // The server accepts TCP before it accepts logins while it finishes recovery: retry briefly.
  for (let attempt = 0; ; attempt++) {
    const client = new pg.Client({ connectionString: `${baseUrl}/postgres` })
    try {
      await client.connect()
      const r = await client.query('select 1 from pg_database where datname = $1', [database])
      if (r.rowCount === 0) await client.query(`create database "${database.replace(/"/g, '""')}"`)
      return
    } catch (err) {
      if (attempt > 100) throw err
      await new Promise((r) => setTimeout(r, 100))
    } finally {
      await client.end().catch(() => undefined)
    }
  }
}
