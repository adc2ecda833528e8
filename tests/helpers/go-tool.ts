import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'

/*
 * A command-line tool written in Go (helm, kubeconform), built from its module with `go install`
 * once per machine and version and kept in ~/.cache/agent-platform/bin/<name>-<version> — no
 * release binary is downloaded, the Go module proxy serves the source. Without a Go toolchain the
 * tool is `{ skip: reason }` and the test that needs it is skipped with that reason (a skip, not a
 * pass); with Go present, a build that fails throws. The first build takes minutes (helm pulls
 * the Kubernetes client libraries: about 13 minutes on a busy 2-core machine); later runs find the
 * binary in the cache.
 */

export type GoTool = { path: string; skip: false } | { path: undefined; skip: string }

export const GO_TOOL_CACHE = join(homedir(), '.cache', 'agent-platform', 'bin')

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
  const out = mkdtempSync(join(GO_TOOL_CACHE, `.build-${name}-`))
  try {
    // Asynchronous on purpose: a build of minutes must not block the event loop, or the test
    // runner never hears the test file's longer timeout and ends it.
    const child = spawn(go, ['install', `${module}@${version}`], {
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
  }
}
