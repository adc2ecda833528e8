import { execFile } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { readdirSync, realpathSync, statSync } from 'node:fs'
import { chmod, lstat, mkdir, readdir, rename, rm, symlink } from 'node:fs/promises'
import { basename, dirname, join, resolve } from 'node:path'
import type { Config } from '../kernel/config.ts'
import type { Logger } from '../kernel/log.ts'
import { Type as T } from '@sinclair/typebox'
import { sql, type Db } from '../platform/db.ts'
import { anyRows, rowType } from '../platform/typed-rows.ts'

/*
 * Installs the approved Python packages (table `dependencies`) into a directory the sandboxes
 * mount read-only at /packages (the runner puts it first on sys.path).
 *
 * - One directory per package set: `<root>/<hash>`, the hash covering the sorted `name+version`
 *   specs and the wheel index listing. A new set never touches an old directory, so sandboxes that
 *   still mount the previous one keep working; `<root>/current` is a symlink to the last set.
 * - pip is the system Python's (`/usr/bin/python3 -I -m pip`), run with execFile (no shell), an
 *   environment of PATH and PIP_CONFIG_FILE=/dev/null only (no pip.conf, no PIP_* variables: the
 *   system /etc/xdg/pip/pip.conf of Debian hosts carries a constraint file), a timeout, and
 *   `--no-index --find-links PACKAGE_INDEX_DIR --only-binary :all:`: only wheels from the local
 *   directory, so installing runs no code of a package on the host. Dependencies are resolved
 *   from the same directory.
 * - Names and version specs are validated again here (they become pip arguments) and passed after
 *   `--`, so nothing a row holds can become an option.
 */
export const PYTHON = '/usr/bin/python3'
export const PIP_TIMEOUT_MS = 300_000

/** PEP 508 project name (before normalization). */
export const NAME_RE = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,98}[A-Za-z0-9])?$/
const VERSION = '[0-9]{1,9}(?:\\.[0-9]{1,9}){0,5}(?:(?:a|b|rc)[0-9]{1,9})?(?:\\.post[0-9]{1,9})?(?:\\.dev[0-9]{1,9})?'
const CLAUSE = `(?:(?:==|!=)${VERSION}(?:\\.\\*)?|(?:<=|>=|~=|<|>)${VERSION})`
/** A PEP 440 specifier set without spaces: up to five comma-separated clauses (`==1.2.0`, `>=1,<2`). */
export const VERSION_SPEC_RE = new RegExp(`^${CLAUSE}(?:,${CLAUSE}){0,4}$`)
const BARE_VERSION_RE = new RegExp(`^${VERSION}$`)

/** PEP 503 normalization: lower case, every run of `-`, `_`, `.` becomes one `-`. */
export const normalizeName = (name: string): string => name.toLowerCase().replace(/[-_.]+/g, '-')

/** The version spec as stored, or null when absent or empty; undefined when invalid (no whitespace anywhere). A bare version means `==`. */
export function normalizeVersion(v: string | null | undefined): string | null | undefined {
  if (v === undefined || v === null || v === '') return null
  if (v.length > 100) return undefined
  if (BARE_VERSION_RE.test(v)) return `==${v}`
  return VERSION_SPEC_RE.test(v) ? v : undefined
}

/** ALLOWED_PACKAGES as normalized names; empty = every name is allowed. */
export const allowedPackages = (config: Config): Set<string> =>
  new Set(
    config.ALLOWED_PACKAGES.split(',')
      .map((s) => s.trim())
      .filter(Boolean)
      .map(normalizeName),
  )

/** Why a package may not be requested or installed under this configuration, or null. */
export function notAllowedReason(config: Config, normalizedName: string): string | null {
  if (!config.ALLOW_PACKAGE_INSTALLATION) return 'package installation is disabled (ALLOW_PACKAGE_INSTALLATION=false)'
  const allowed = allowedPackages(config)
  if (allowed.size > 0 && !allowed.has(normalizedName)) return `${normalizedName} is not in ALLOWED_PACKAGES`
  return null
}

export const packagesRoot = (config: Config): string =>
  config.PACKAGES_DIR !== '' ? resolve(config.PACKAGES_DIR) : join(config.DATA_DIR, 'packages')

/** The directory of the last successful install (`<root>/current`), or undefined when there is none. */
export function currentPackagesDir(config: Config): string | undefined {
  try {
    const dir = realpathSync(join(packagesRoot(config), 'current'))
    return statSync(dir).isDirectory() ? dir : undefined
  } catch {
    return undefined
  }
}

export interface InstallResult {
  /** The directory to mount at /packages; undefined when no package is installed. */
  dir: string | undefined
  installed: string[]
  failed: { name: string; error: string }[]
}

interface Row {
  id: string
  name: string
  spec: string
}

/** An approved request as stored: the name and spec are checked again before they reach pip. */
const ApprovedRow = rowType(
  T.Object(
    { id: T.String(), package_name: T.String(), version: T.Union([T.String(), T.Null()]) },
    { title: 'approved dependency' },
  ),
)

const serial = new Map<string, Promise<unknown>>()

/** Installs every approved (and already installed) package; see the file comment. One run at a time per root. */
export async function installApprovedPackages(o: {
  db: Db
  config: Config
  log: Logger
  timeoutMs?: number
}): Promise<InstallResult> {
  const root = packagesRoot(o.config)
  const previous = serial.get(root) ?? Promise.resolve()
  const run = previous.catch(() => undefined).then(() => install(root, o))
  serial.set(root, run)
  try {
    return await run
  } finally {
    if (serial.get(root) === run) serial.delete(root)
  }
}

async function install(
  root: string,
  o: { db: Db; config: Config; log: Logger; timeoutMs?: number },
): Promise<InstallResult> {
  const { db, config, log } = o
  if (!config.ALLOW_PACKAGE_INSTALLATION) {
    await setCurrent(root, undefined)
    return { dir: undefined, installed: [], failed: [] }
  }
  const rows = await anyRows(
    db,
    ApprovedRow,
    sql.unsafe`select id, package_name, version from dependencies where status in ('approved', 'installed') order by package_name`,
  )
  const failed: { row: Row; error: string }[] = []
  const candidates: Row[] = []
  for (const r of rows) {
    const name = r.package_name
    const version = normalizeVersion(r.version)
    const row: Row = { id: r.id, name, spec: `${name}${version ?? ''}` }
    const reason = notAllowedReason(config, name)
    if (reason !== null) failed.push({ row, error: reason })
    else if (!NAME_RE.test(name) || normalizeName(name) !== name || version === undefined)
      failed.push({ row, error: 'invalid package name or version spec' })
    else candidates.push(row)
  }

  let dir: string | undefined
  const installed: Row[] = []
  if (candidates.length > 0) {
    const index = config.PACKAGE_INDEX_DIR === '' ? '' : resolve(config.PACKAGE_INDEX_DIR)
    const indexProblem =
      index === ''
        ? 'PACKAGE_INDEX_DIR is not set: there is no package index to install from (PyPI is not used)'
        : isDir(index)
          ? null
          : `PACKAGE_INDEX_DIR ${index} is not a readable directory`
    if (indexProblem !== null) {
      for (const row of candidates) failed.push({ row, error: indexProblem })
    } else {
      await mkdir(root, { recursive: true, mode: 0o755 })
      await chmod(root, 0o755)
      const pip = (specs: string[], target: string) =>
        runPip(['install', ...PIP_FLAGS, '--find-links', index, '--target', target, '--', ...specs], {
          cwd: root,
          timeoutMs: o.timeoutMs ?? PIP_TIMEOUT_MS,
        })
      const installSet = async (set: Row[]): Promise<{ dir: string } | { error: string }> => {
        const specs = set.map((r) => r.spec).sort()
        const target = join(root, setHash(specs, index))
        if (isDir(target)) return { dir: target }
        const tmp = join(root, `.tmp-${basename(target)}-${randomBytes(4).toString('hex')}`)
        const res = await pip(specs, tmp)
        if (!res.ok) {
          await rm(tmp, { recursive: true, force: true })
          return { error: res.output }
        }
        await mkdir(tmp, { recursive: true })
        await makeWorldReadable(tmp)
        try {
          await rename(tmp, target)
        } catch (err) {
          // another process finished the same set first: use its directory
          await rm(tmp, { recursive: true, force: true })
          if (!isDir(target)) throw err
        }
        return { dir: target }
      }
      const all = await installSet(candidates)
      if ('dir' in all) {
        dir = all.dir
        installed.push(...candidates)
      } else if (candidates.length === 1) {
        failed.push({ row: candidates[0] as Row, error: all.error })
      } else {
        // find the packages that fail on their own, then install the rest together
        const good: Row[] = []
        for (const row of candidates) {
          const probe = join(root, `.probe-${randomBytes(4).toString('hex')}`)
          const res = await pip([row.spec], probe)
          await rm(probe, { recursive: true, force: true })
          if (res.ok) good.push(row)
          else failed.push({ row, error: res.output })
        }
        if (good.length > 0) {
          const rest = await installSet(good)
          if ('dir' in rest) {
            dir = rest.dir
            installed.push(...good)
          } else {
            for (const row of good)
              failed.push({
                row,
                error: `installs alone but not together with the other approved packages: ${rest.error}`,
              })
          }
        }
      }
      if (dir !== undefined) warnIfUnreachable(dir, log)
    }
  }

  if (installed.length > 0) {
    await db.query(sql.unsafe`update dependencies set status = 'installed', error = null, installed_at = now(), updated_at = now()
      where id = any(${sql.array(
        installed.map((r) => r.id),
        'uuid',
      )}) and status in ('approved', 'installed')`)
  }
  for (const f of failed) {
    await db.query(
      sql.unsafe`update dependencies set status = 'failed', error = ${f.error}, updated_at = now() where id = ${f.row.id}::uuid and status in ('approved', 'installed')`,
    )
  }
  await setCurrent(root, dir)
  const result = {
    dir,
    installed: installed.map((r) => r.name),
    failed: failed.map((f) => ({ name: f.row.name, error: f.error })),
  }
  log.info({ dir, installed: result.installed, failed: result.failed.map((f) => f.name) }, 'packages installed')
  return result
}

const PIP_FLAGS = [
  '--isolated',
  '--no-input',
  '--disable-pip-version-check',
  '--no-cache-dir',
  '--no-color',
  '--progress-bar',
  'off',
  '--root-user-action',
  'ignore',
  '--no-warn-script-location',
  '--no-index',
  '--only-binary',
  ':all:',
]

function runPip(args: string[], o: { cwd: string; timeoutMs: number }): Promise<{ ok: boolean; output: string }> {
  return new Promise((done) => {
    execFile(
      PYTHON,
      ['-I', '-m', 'pip', ...args],
      {
        cwd: o.cwd,
        env: { PATH: '/usr/bin:/bin', PIP_CONFIG_FILE: '/dev/null' },
        timeout: o.timeoutMs,
        killSignal: 'SIGKILL',
        maxBuffer: 8 * 1024 * 1024,
        shell: false,
        encoding: 'utf8',
      },
      (err, stdout, stderr) => {
        if (err === null) return done({ ok: true, output: '' })
        const e = err as NodeJS.ErrnoException & { killed?: boolean; code?: unknown }
        if (e.killed === true)
          return done({ ok: false, output: `pip timed out after ${String(Math.round(o.timeoutMs / 1000))} s` })
        if (e.code === 'ENOENT') return done({ ok: false, output: `${PYTHON} not found` })
        done({ ok: false, output: pipErrorTail(`${stdout}\n${stderr}`) })
      },
    )
  })
}

/** The `ERROR:` lines of pip's output when there are any, else its last lines; at most 2000 characters. */
export function pipErrorTail(output: string): string {
  const lines = output
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l !== '')
  const errors = lines.filter((l) => l.startsWith('ERROR:'))
  const text = (errors.length > 0 ? errors : lines.slice(-15)).join('\n')
  return text.length > 2000 ? `…${text.slice(-2000)}` : text || 'pip failed without output'
}

function setHash(specs: string[], index: string): string {
  // the index listing is part of the key: a new wheel for an unpinned spec makes a new set
  let listing: string[] = []
  try {
    listing = readdirSync(index)
      .filter((f) => f.endsWith('.whl'))
      .sort()
      .map((f) => {
        const s = statSync(join(index, f))
        return `${f}:${String(s.size)}:${String(s.mtimeMs)}`
      })
  } catch {
    listing = []
  }
  return createHash('sha256').update(JSON.stringify({ specs, index, listing })).digest('hex').slice(0, 24)
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory()
  } catch {
    return false
  }
}

/** chmod -R a+rX: sandboxes run under other uids. */
async function makeWorldReadable(p: string): Promise<void> {
  const s = await lstat(p)
  if (s.isSymbolicLink()) return
  if (s.isDirectory()) {
    await chmod(p, (s.mode & 0o7777) | 0o555)
    for (const e of await readdir(p)) await makeWorldReadable(join(p, e))
  } else {
    await chmod(p, (s.mode & 0o7777) | 0o444 | (s.mode & 0o111 ? 0o111 : 0))
  }
}

/** Points `<root>/current` at `dir` (atomically), or removes it. */
async function setCurrent(root: string, dir: string | undefined): Promise<void> {
  const link = join(root, 'current')
  if (dir === undefined) {
    await rm(link, { force: true })
    return
  }
  const tmp = join(root, `.current-${randomBytes(4).toString('hex')}`)
  await symlink(basename(dir), tmp)
  await rename(tmp, link)
}

/** Sandboxes under other uids (bubblewrap as root) need o+x on every directory above the set. */
function warnIfUnreachable(dir: string, log: Logger): void {
  if (process.getuid?.() !== 0) return
  for (let d = dirname(dir); d !== dirname(d); d = dirname(d)) {
    try {
      const s = statSync(d)
      if ((s.mode & 0o001) === 0) {
        log.warn(
          { dir, blocked_at: d },
          'packages directory is not reachable by sandbox uids (a parent lacks o+x); set PACKAGES_DIR to a world-traversable path',
        )
        return
      }
    } catch {
      return
    }
  }
}
