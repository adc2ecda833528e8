import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'

/*
 * A command-line tool written in Go (helm, kubeconform), built from its module with `go install`
 * once per machine and version and kept in ~/.cache/agent-platform/bin/<name>-<version> — no
 * release binary is downloaded, the Go module proxy serves the source. Without a Go toolchain the
 * tool is `{ skip: reason }` and the test that needs it is skipped with that reason (a skip, not a
 * pass); with Go present, a build that fails throws. The first build takes minutes (helm pulls
 * the Kubernetes client libraries: about 13 minutes on a busy 2-core machine); later runs find the
 * binary in the cache. tests/run.sh starts the builds of `GO_TOOLS` in the background when the run
 * begins (tests/setup/go-tools.ts), so a fresh machine downloads and compiles them beside the
 * lint, the type-check and the first test files instead of inside the chart test's slot; a test
 * that asks for a tool being built waits for that build (a lock beside the cached binary) instead
 * of starting a second one.
 */

export type GoTool = { path: string; skip: false } | { path: undefined; skip: string }

export const GO_TOOL_CACHE = join(homedir(), '.cache', 'agent-platform', 'bin')

/** The tools the tests build, with their modules and pinned versions (the chart test's). */
export const GO_TOOLS = {
  helm: { module: 'helm.sh/helm/v4/cmd/helm', version: 'v4.3.2' },
  kubeconform: { module: 'github.com/yannh/kubeconform/cmd/kubeconform', version: 'v0.8.0' },
} as const

/** One of GO_TOOLS, built or found in the cache. */
export const goToolNamed = (name: keyof typeof GO_TOOLS): Promise<GoTool> =>
  goTool(name, GO_TOOLS[name].module, GO_TOOLS[name].version)

/** Whether a process that holds a build lock is still alive. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** The pid in a build lock, 0 while it is being written (or gone). */
function ownerOf(lock: string): number {
  try {
    return Number(readFileSync(join(lock, 'pid'), 'utf8')) || 0
  } catch {
    return 0
  }
}

/**
 * Takes the build lock of `path` (a directory created atomically, with the owner's pid inside),
 * or waits while a live process holds it; false when the tool appeared meanwhile. A lock left by
 * a dead process is taken over.
 */
async function lockBuild(path: string, timeoutMs: number): Promise<boolean> {
  const lock = `${path}.lock`
  const until = Date.now() + timeoutMs
  for (;;) {
    if (existsSync(path)) return false
    try {
      mkdirSync(lock)
      writeFileSync(join(lock, 'pid'), String(process.pid))
      return true
    } catch {
      // held: by a live builder, wait for it to finish; by a dead one, take it over
      const owner = ownerOf(lock)
      if (owner > 0 && !alive(owner)) rmSync(lock, { recursive: true, force: true })
      else if (Date.now() > until) throw new Error(`waited ${String(timeoutMs / 1000)} s for another build of ${path}`)
      else await new Promise((r) => setTimeout(r, 1000))
    }
  }
}

/** The go command: /usr/local/go/bin/go (the toolchain's usual home) or `go` on PATH. */
export function goCommand(): string | undefined {
  for (const candidate of ['/usr/local/go/bin/go', 'go']) {
    const r = spawnSync(candidate, ['version'], { encoding: 'utf8' })
    if (r.status === 0) return candidate
  }
  return undefined
}

/**
 * `module` is the package path of the command (`helm.sh/helm/v4/cmd/helm`), `version` its module
 * version (`v4.3.2`). The binary is built into a fresh directory and renamed into the cache, so a
 * build cut short leaves nothing half-written under the final name.
 */
export async function goTool(name: string, module: string, version: string, timeoutMs = 1_800_000): Promise<GoTool> {
  const path = join(GO_TOOL_CACHE, `${name}-${version}`)
  if (existsSync(path)) return { path, skip: false }
  const go = goCommand()
  if (go === undefined)
    return {
      path: undefined,
      skip: `no Go toolchain here to build ${name} ${version} (go install ${module}@${version})`,
    }
  mkdirSync(GO_TOOL_CACHE, { recursive: true })
  if (!(await lockBuild(path, timeoutMs))) return { path, skip: false }
  const out = mkdtempSync(join(GO_TOOL_CACHE, `.build-${name}-`))
  try {
    // Asynchronous on purpose: a build of minutes must not block the event loop, or the test
    // runner never hears the test file's longer timeout and ends it.
    // no symbol table or DWARF: a smaller link of a binary nobody debugs here
    const child = spawn(go, ['install', '-trimpath', '-ldflags=-s -w', `${module}@${version}`], {
      env: { ...process.env, GOBIN: out, CGO_ENABLED: '0', GOFLAGS: '-buildvcs=false' },
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: timeoutMs,
    })
    let stderr = ''
    child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)))
    const code = await new Promise<number | null>((resolve) => {
      child.on('error', (err) => {
        stderr += String(err)
        resolve(null)
      })
      child.on('close', resolve)
    })
    const built = join(out, name)
    if (code !== 0 || !existsSync(built)) {
      // Go is here, so a failed build is a failure, not a reason to skip.
      throw new Error(`go install ${module}@${version} failed: ${stderr.trim().split('\n').slice(-5).join(' | ')}`)
    }
    renameSync(built, path)
    return { path, skip: false }
  } finally {
    rmSync(out, { recursive: true, force: true })
    rmSync(`${path}.lock`, { recursive: true, force: true })
  }
}
