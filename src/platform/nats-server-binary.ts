import { spawnSync } from 'node:child_process'
import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { homedir } from 'node:os'
import { delimiter, join } from 'node:path'
import type { Logger } from '../kernel/log.ts'
import { compareNatsVersions, parseNatsVersion } from './nats-capabilities.ts'

/*
 * Which nats-server binary single-node mode and the test suite start. In order: NATS_SERVER_BIN
 * (the caller chose); a nats-server at or above the pinned release on PATH, in the data
 * directory's bin/ or in the per-machine cache; else any nats-server (Debian's 2.9.10 package,
 * installed by apt as root). `ensureCurrentNatsServer` builds the pinned release into the cache
 * with `go install` when Go is there, once per machine: picking never builds, so the many
 * processes of a test run that start their own servers stay cheap.
 */

/** The nats-server release the platform is developed and tested against. */
export const PINNED_NATS_SERVER = '2.15.3'
const MODULE = 'github.com/nats-io/nats-server/v2'
/** The Go release the pinned nats-server's go.mod asks for (`go 1.26.0`). */
const GO_NEEDED = '1.26.0'
/** A failed build is not retried by every start: the reason is kept this long. */
const FAILED_BUILD_KEPT_MS = 24 * 3600_000
const DEBIAN_PATHS = ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server']

export interface NatsServerPick {
  bin: string
  /** `2.15.3`; undefined when `--version` said nothing readable. */
  version: string | undefined
  why: string
}

/**
 * The per-machine cache of built servers (outside any clone, so every clone on the machine
 * shares one build): $XDG_CACHE_HOME/agent-platform/bin, else ~/.cache/agent-platform/bin.
 */
export function natsServerCacheDir(): string {
  const xdg = process.env['XDG_CACHE_HOME']
  const base = xdg !== undefined && xdg !== '' ? xdg : join(homedir(), '.cache')
  return join(base, 'agent-platform', 'bin')
}

const versions = new Map<string, { mtimeMs: number; version: string | undefined }>()

/** What `<bin> --version` says (`nats-server: v2.15.3` → `2.15.3`), remembered per binary and mtime. */
export function natsServerVersion(bin: string): string | undefined {
  let mtimeMs: number
  try {
    mtimeMs = statSync(bin).mtimeMs
  } catch {
    return undefined
  }
  const known = versions.get(bin)
  if (known?.mtimeMs === mtimeMs) return known.version
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 10_000 })
  const m = /v?(\d+\.\d+\.\d+\S*)/.exec(`${r.stdout ?? ''} ${r.stderr ?? ''}`)
  const version = r.status === 0 && m?.[1] !== undefined ? m[1] : undefined
  versions.set(bin, { mtimeMs, version })
  return version
}

const isCurrent = (version: string | undefined): boolean =>
  version !== undefined && compareNatsVersions(version, PINNED_NATS_SERVER) >= 0

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK)
    return statSync(path).isFile()
  } catch {
    return false
  }
}

function onPath(name: string): string[] {
  return (process.env['PATH'] ?? '')
    .split(delimiter)
    .filter((d) => d !== '')
    .map((d) => join(d, name))
    .filter(executable)
}

/** Every nats-server this machine has, where a current one is looked for first. */
function candidates(dataDir: string | undefined): { bin: string; where: string }[] {
  const list = [
    ...onPath('nats-server').map((bin) => ({ bin, where: 'on PATH' })),
    ...(dataDir === undefined
      ? []
      : [{ bin: join(dataDir, 'bin', 'nats-server'), where: "in the data directory's bin/" }]),
    { bin: join(natsServerCacheDir(), 'nats-server'), where: 'in the machine cache' },
    ...DEBIAN_PATHS.map((bin) => ({ bin, where: 'installed' })),
  ]
  const seen = new Set<string>()
  return list.filter((c) => {
    if (seen.has(c.bin) || !executable(c.bin)) return false
    seen.add(c.bin)
    return true
  })
}

export interface NatsServerChoice {
  /** The data directory, whose bin/ may hold a current nats-server. */
  dataDir?: string
  /** The configured NATS_SERVER_BIN (config.ts); empty or absent: the process environment's. */
  bin?: string
}

/** The binary to start (see the file comment), or undefined when the machine has none. */
export function pickNatsServer(options: NatsServerChoice = {}): NatsServerPick | undefined {
  const explicit = options.bin !== undefined && options.bin !== '' ? options.bin : process.env['NATS_SERVER_BIN']
  if (explicit !== undefined && explicit !== '')
    return { bin: explicit, version: natsServerVersion(explicit), why: 'NATS_SERVER_BIN' }
  const found = candidates(options.dataDir).map((c) => ({ ...c, version: natsServerVersion(c.bin) }))
  const current = found.find((c) => isCurrent(c.version))
  if (current !== undefined)
    return { bin: current.bin, version: current.version, why: `v${PINNED_NATS_SERVER} or newer ${current.where}` }
  const any = found[0]
  if (any === undefined) return undefined
  return {
    bin: any.bin,
    version: any.version,
    why: `no nats-server v${PINNED_NATS_SERVER} or newer (build it with Go: see docs/nats-server.md); ${any.where}`,
  }
}

/** A Go toolchain new enough for the pinned server: on PATH or Go's default install place. */
export function findGo(): { go: string; version: string } | { reason: string } {
  const gos = [...onPath('go'), '/usr/local/go/bin/go'].filter(executable)
  if (gos.length === 0) return { reason: 'no Go toolchain (go on PATH or /usr/local/go/bin/go)' }
  const seen: string[] = []
  for (const go of gos) {
    const r = spawnSync(go, ['env', 'GOVERSION'], { encoding: 'utf8', timeout: 30_000 })
    const version = r.status === 0 ? r.stdout.trim().replace(/^go/, '') : ''
    if (parseNatsVersion(version) !== undefined && compareNatsVersions(version, GO_NEEDED) >= 0) return { go, version }
    seen.push(`${go} ${version === '' ? '(unreadable version)' : version}`)
  }
  return { reason: `Go ${GO_NEEDED} or newer needed, found ${seen.join(', ')}` }
}

export type EnsureResult =
  | { outcome: 'present'; pick: NatsServerPick }
  | { outcome: 'built'; pick: NatsServerPick; seconds: number }
  | { outcome: 'fallback'; pick: NatsServerPick | undefined; reason: string }

/**
 * Makes a current nats-server available unless one is (or NATS_SERVER_BIN chose one): builds the
 * pinned release into the machine cache (or, when that is not writable, `<dataDir>/bin`). A
 * failed build never fails the caller: it says why and the pick falls back to what is installed.
 */
export function ensureCurrentNatsServer(options: NatsServerChoice & { log?: Logger } = {}): EnsureResult {
  const before = pickNatsServer(options)
  if (before !== undefined && (before.why === 'NATS_SERVER_BIN' || isCurrent(before.version)))
    return { outcome: 'present', pick: before }
  // Running on the installed (older) server is supported, so only a build that just failed warns;
  // a machine without Go, or a failure already reported, says so at info on each start.
  const fallback = (reason: string, level: 'info' | 'warn' = 'info'): EnsureResult => {
    options.log?.[level]({ reason, fallback: before?.bin }, 'no current nats-server: using the installed one')
    return { outcome: 'fallback', pick: before, reason }
  }
  const dir = writableDir([
    natsServerCacheDir(),
    ...(options.dataDir === undefined ? [] : [join(options.dataDir, 'bin')]),
  ])
  if (dir === undefined) return fallback('no writable directory for the build (machine cache or data directory bin/)')
  const marker = join(dir, `nats-server-v${PINNED_NATS_SERVER}.failed`)
  if (existsSync(marker) && Date.now() - statSync(marker).mtimeMs < FAILED_BUILD_KEPT_MS)
    return fallback(`an earlier build failed (${marker}, retried after a day): ${readFileSync(marker, 'utf8').trim()}`)
  const go = findGo()
  if ('reason' in go) return fallback(go.reason)
  options.log?.info(
    { go: go.go, goVersion: go.version, into: dir },
    `building nats-server v${PINNED_NATS_SERVER} with go install (about a minute, once per machine)`,
  )
  const started = Date.now()
  // Built into a directory of its own, then renamed into place: a start or a second build running
  // at the same time sees the old binary or the new one, never half of one.
  const staging = mkdtempSync(join(dir, '.build-'))
  // GOTOOLCHAIN=local: never download another Go toolchain (findGo checked this one is new enough).
  const r = spawnSync(go.go, ['install', `${MODULE}@v${PINNED_NATS_SERVER}`], {
    encoding: 'utf8',
    timeout: 15 * 60_000,
    cwd: staging,
    env: { ...process.env, GOBIN: staging, GOTOOLCHAIN: 'local' },
  })
  const built = join(dir, 'nats-server')
  const fresh = join(staging, 'nats-server')
  const version = r.status === 0 ? natsServerVersion(fresh) : undefined
  if (isCurrent(version)) renameSync(fresh, built)
  rmSync(staging, { recursive: true, force: true })
  if (!isCurrent(version)) {
    const why =
      r.error !== undefined
        ? r.error.message
        : `go install exited ${String(r.status)}${version === undefined ? '' : `, built v${version}`}: ${lastLines(r.stderr)}`
    writeFileSync(marker, `${why}\n`)
    return fallback(`building nats-server v${PINNED_NATS_SERVER} failed: ${why}`, 'warn')
  }
  const seconds = Math.round((Date.now() - started) / 1000)
  return { outcome: 'built', pick: { bin: built, version, why: `built v${PINNED_NATS_SERVER} into ${dir}` }, seconds }
}

function writableDir(dirs: string[]): string | undefined {
  for (const dir of dirs) {
    try {
      mkdirSync(dir, { recursive: true })
      accessSync(dir, constants.W_OK)
      return dir
    } catch {
      /* next */
    }
  }
  return undefined
}

function lastLines(text: string | undefined, n = 5): string {
  return (text ?? '').trim().split('\n').slice(-n).join(' | ')
}
