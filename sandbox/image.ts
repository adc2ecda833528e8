import { spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  chmodSync,
  cpSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, join, relative, resolve } from 'node:path'
import type Docker from 'dockerode'
import { RUNNER_SOURCE } from './runner-path.ts'

/*
 * The sandbox image of the docker driver, built locally: no registry is reachable on these
 * machines, so the image is a rootfs tarball given to `podman import` (or to the Engine API's
 * import). It holds only what the runner needs: the host's system Python (by realpath), its stdlib
 * with its __pycache__ but without tests, IDLE, tkinter, curses, lib2to3, ensurepip, venv, pydoc
 * data and the static libpython (config-*), the shared libraries `ldd` lists for the interpreter
 * and the extension modules kept, the dynamic loader, /runner/runner.py, an empty /tmp and an
 * /etc/passwd with nobody. No shell, no coreutils, no package manager (about 40 MB).
 *
 * The tag is content-addressed (`localhost/platform-sandbox:<hash>`, the hash of runner.py, the
 * interpreter path and this recipe's version), so a changed runner gets a new image and an
 * unchanged one is reused.
 */

/** Bump when the layout below changes, so existing images are not reused. */
const RECIPE = 'sandbox-rootfs-2'

/** Parts of the stdlib a function never needs (and that make most of its size). */
const STDLIB_EXCLUDES = new Set([
  'test',
  'idlelib',
  'tkinter',
  'turtledemo',
  'lib2to3',
  'ensurepip',
  'pydoc_data',
  'venv',
  'curses',
  'dist-packages',
  'site-packages',
])

/** Extension modules left out: terminals, NIS, Berkeley DB, audio devices, CPython's test modules (and with them ncurses, readline, libdb, libnsl, libtirpc and Kerberos). */
const DYNLOAD_EXCLUDES =
  /^(readline|_curses|_curses_panel|nis|_dbm|ossaudiodev|_tkinter|xxlimited|xxlimited_35|_xxsubinterpreters|_ctypes_test|_test\w*|_xxtestfuzz)\./

export interface ImageLog {
  info(obj: object, msg?: string): void
}

export interface EnsureImageOptions {
  /** The podman binary (default `podman` on PATH). */
  podman?: string
  /** Global podman flags put before every sub-command (e.g. `--root`, `--runroot`). */
  podmanArgs?: string[]
  /** Environment for podman (CONTAINERS_CONF); default this process's. */
  env?: NodeJS.ProcessEnv
  /**
   * Import through this Docker Engine API (POST /images/create?fromSrc=-, then a tag) instead of
   * the podman CLI: works against Docker and `podman system service` alike.
   */
  docker?: Docker
  /** Image tag; default `localhost/platform-sandbox:<hash>`. */
  tag?: string
  /** The system interpreter copied into the image (default /usr/bin/python3). */
  python?: string
  log?: ImageLog
}

export function defaultSandboxTag(python = '/usr/bin/python3'): string {
  const h = createHash('sha256')
  h.update(RECIPE)
  h.update('\0')
  h.update(realpathSync(python))
  h.update('\0')
  h.update(readFileSync(RUNNER_SOURCE))
  return `localhost/platform-sandbox:${h.digest('hex').slice(0, 16)}`
}

/** Shared libraries (absolute host paths, as ldd prints them) that `files` load, plus the loader. */
function sharedLibraries(files: string[]): Set<string> {
  const libs = new Set<string>()
  for (const f of files) {
    const r = spawnSync('ldd', [f], { encoding: 'utf8' })
    if (r.status !== 0) continue
    for (const line of r.stdout.split('\n')) {
      // "libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)" or "/lib64/ld-linux-x86-64.so.2 (0x...)"
      const m = /=>\s*(\/\S+)/.exec(line) ?? /^\s*(\/\S+)\s+\(/.exec(line)
      if (m?.[1] !== undefined) libs.add(m[1])
    }
  }
  return libs
}

/** Copies a host path into the rootfs with every symlink on the way (as symlinks) and its target. */
function copyWithLinks(root: string, hostPath: string, seen: Set<string>): void {
  let p = hostPath
  for (let hops = 0; hops < 20; hops++) {
    if (seen.has(p)) return
    seen.add(p)
    // resolve the directories of the path (e.g. /lib -> usr/lib) but keep the last component as is
    const dir = realpathSync(dirname(p))
    const own = join(dir, basename(p))
    if (dir !== dirname(p)) copyWithLinks(root, dirname(p), seen)
    const st = lstatSync(own)
    const target = join(root, own)
    mkdirSync(dirname(target), { recursive: true })
    if (st.isSymbolicLink()) {
      const link = readlinkSync(own)
      try {
        symlinkSync(link, target)
      } catch {
        // already there
      }
      p = resolve(dir, link)
      continue
    }
    if (st.isDirectory()) {
      mkdirSync(target, { recursive: true })
      return
    }
    cpSync(own, target, { dereference: false, preserveTimestamps: true })
    return
  }
}

function listSharedObjects(dir: string): string[] {
  const out: string[] = []
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile() && e.name.endsWith('.so')) out.push(join(e.parentPath, e.name))
  }
  return out
}

/** Fills `root` with the image's files (the ldd-listed libraries include the dynamic loader). */
export function buildRootfs(root: string, pythonPath = '/usr/bin/python3'): void {
  const python = realpathSync(pythonPath)
  const version = /python(\d+\.\d+)$/.exec(python)?.[1]
  if (version === undefined) throw new Error(`cannot tell the Python version of ${python}`)
  const stdlib = join(dirname(dirname(python)), 'lib', `python${version}`)
  const seen = new Set<string>()
  for (const d of ['usr/bin', 'usr/lib', 'usr/lib64', 'etc', 'runner', 'proc', 'dev', 'sys', 'packages'])
    mkdirSync(join(root, d), { recursive: true })
  // merged /usr: the loader and libraries are found through /lib and /lib64
  for (const [name, to] of [
    ['lib', 'usr/lib'],
    ['lib64', 'usr/lib64'],
    ['bin', 'usr/bin'],
  ] as const)
    symlinkSync(to, join(root, name))
  mkdirSync(join(root, 'tmp'), { mode: 0o1777 })
  chmodSync(join(root, 'tmp'), 0o1777)
  copyWithLinks(root, python, seen)
  // the runner is started as /usr/bin/python3
  const py3 = join(root, 'usr/bin/python3')
  try {
    lstatSync(py3)
  } catch {
    symlinkSync(basename(python), py3)
  }
  cpSync(stdlib, join(root, stdlib), {
    recursive: true,
    dereference: false,
    // the __pycache__ files are kept (they save ~50 ms a start and the compile of every stdlib
    // import in user code); they are only used while the sources keep their mtimes
    preserveTimestamps: true,
    filter: (src) => {
      const rel = relative(stdlib, src)
      const first = rel.split('/')[0] ?? ''
      if (STDLIB_EXCLUDES.has(first) || first.startsWith('config-')) return false
      const name = basename(src)
      // test modules of extension packages (ctypes/test, sqlite3/test, ...), and _test* extensions
      if (name === 'test' || name === 'tests') return false
      if (first === 'lib-dynload' && DYNLOAD_EXCLUDES.test(name)) return false
      return true
    },
  })
  for (const lib of sharedLibraries([python, ...listSharedObjects(join(root, stdlib))])) copyWithLinks(root, lib, seen)
  cpSync(RUNNER_SOURCE, join(root, 'runner', 'runner.py'))
  chmodSync(join(root, 'runner', 'runner.py'), 0o644)
  writeFileSync(
    join(root, 'etc/passwd'),
    'root:x:0:0:root:/root:/nonexistent\nnobody:x:65534:65534:nobody:/tmp:/nonexistent\n',
  )
  writeFileSync(join(root, 'etc/group'), 'root:x:0:\nnogroup:x:65534:\n')
}

function run(
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv | undefined,
): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(cmd, args, { env: env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')))
    child.stderr.on('data', (d: Buffer) => (err += d.toString('utf8')))
    child.on('error', reject)
    child.on('close', (code) => resolveRun({ code, out, err }))
  })
}

async function imageExists(o: EnsureImageOptions, tag: string): Promise<boolean> {
  if (o.docker !== undefined) {
    try {
      await o.docker.getImage(tag).inspect()
      return true
    } catch (err) {
      if ((err as { statusCode?: unknown }).statusCode === 404) return false
      throw err
    }
  }
  return (await run(o.podman ?? 'podman', [...(o.podmanArgs ?? []), 'image', 'exists', tag], o.env)).code === 0
}

async function importTarball(o: EnsureImageOptions, tarball: string, tag: string): Promise<void> {
  if (o.docker === undefined) {
    const imp = await run(
      o.podman ?? 'podman',
      [...(o.podmanArgs ?? []), 'import', '--change', 'WORKDIR /tmp', '--change', 'USER 65534:65534', tarball, tag],
      o.env,
    )
    if (imp.code !== 0) throw new Error(`podman import failed: ${imp.err.trim()}`)
    return
  }
  const docker = o.docker
  const colon = tag.lastIndexOf(':')
  const repo = colon > tag.lastIndexOf('/') ? tag.slice(0, colon) : tag
  const version = colon > tag.lastIndexOf('/') ? tag.slice(colon + 1) : 'latest'
  // `repo` may carry the tag (Docker's API); podman 4.3 reads it whole and ignores `tag`
  const stream = await docker.importImage(tarball, { repo: tag, changes: ['WORKDIR /tmp', 'USER 65534:65534'] })
  const events = await new Promise<Array<Record<string, unknown>>>((resolveImport, reject) => {
    ;(
      docker.modem as {
        followProgress(
          s: NodeJS.ReadableStream,
          done: (err: Error | null, out: Array<Record<string, unknown>>) => void,
        ): void
      }
    ).followProgress(stream, (err, out) => (err === null ? resolveImport(out) : reject(err)))
  })
  const failed = events.find((e) => typeof e['error'] === 'string')
  if (failed !== undefined) throw new Error(`image import failed: ${String(failed['error'])}`)
  // podman's compatible API ignores repo/tag on import: tag the imported id (Docker: a no-op)
  const id = events
    .map((e) => (typeof e['status'] === 'string' && e['status'].startsWith('sha256:') ? e['status'] : null))
    .find((x) => x !== null)
  if (!(await imageExists(o, tag))) {
    if (id === undefined || id === null) throw new Error('image import returned no image id')
    await docker.getImage(id).tag({ repo, tag: version })
  }
}

/**
 * Returns the tag of the sandbox image, importing it first when missing: through the podman CLI
 * (`podman import`) by default, or through a Docker Engine API when `docker` is given. A rootfs
 * tarball is the one way to make an image here: no registry is reachable.
 */
export async function ensureSandboxImage(o: EnsureImageOptions): Promise<string> {
  const tag = o.tag ?? defaultSandboxTag(o.python)
  if (await imageExists(o, tag)) return tag
  const started = Date.now()
  const work = mkdtempSync(join(tmpdir(), 'platform-rootfs-'))
  try {
    const root = join(work, 'rootfs')
    mkdirSync(root)
    buildRootfs(root, o.python)
    const tarball = join(work, 'rootfs.tar')
    // numeric owner root:root for everything; --sort for a reproducible archive
    const tar = await run(
      'tar',
      ['--numeric-owner', '--owner=0', '--group=0', '--sort=name', '-C', root, '-cf', tarball, '.'],
      process.env,
    )
    if (tar.code !== 0) throw new Error(`tar failed: ${tar.err.trim()}`)
    await importTarball(o, tarball, tag)
    o.log?.info({ tag, ms: Date.now() - started, bytes: lstatSync(tarball).size }, 'sandbox image imported')
    return tag
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}
