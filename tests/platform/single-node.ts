import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, lstatSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/*
 * Single-node mode as a separate process (what `npm start` runs), for the tests of tests/platform/:
 * a temporary DATA_DIR, NATS_URL / DATABASE_URL unset, the gateway on a free port.
 */
export const root = join(import.meta.dirname, '..', '..')

export interface SingleNode {
  child: ChildProcess
  port: number
  base: string
  output: () => string
  /** The local servers' pids from their pid files (they change when a server is restarted). */
  natsPid: () => number
  postgresPid: () => number
}

export function tempDataDir(t: { teardown(fn: () => unknown): void }): string {
  const dataDir = mkdtempSync(join(tmpdir(), 'platform-start-'))
  t.teardown(() => {
    // as root with a 0700 temp dir the cluster lives under /var/lib/agent-platform, linked from DATA_DIR/pg
    const pg = join(dataDir, 'pg')
    if (existsSync(pg) && lstatSync(pg).isSymbolicLink())
      rmSync(join(realpathSync(pg), '..'), { recursive: true, force: true })
    rmSync(dataDir, { recursive: true, force: true })
  })
  return dataDir
}

export function singleNodeEnv(dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: '0',
    LOG_LEVEL: 'warn',
    // no console: these tests are about the platform (tests/console/ start it)
    CONSOLE_PORT: '0',
    NATS_URL: '',
    DATABASE_URL: '',
    DATABASE_HOST: '',
    NATS_PREFIX: '',
    ...extra,
  }
}

/** `npm` runs `npm start` exactly as a user or a process manager would; `node` runs the CLI directly. */
export function startSingleNode(env: NodeJS.ProcessEnv, how: 'node' | 'npm' = 'node'): Promise<SingleNode> {
  const child =
    how === 'npm'
      ? spawn('npm', ['start'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'start'], {
          cwd: root,
          env,
          stdio: ['ignore', 'pipe', 'pipe'],
        })
  let out = ''
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()))
  const dataDir = env.DATA_DIR as string
  const natsPid = () => Number(readFileSync(join(dataDir, 'nats', 'nats.pid'), 'utf8').trim())
  const postgresPid = () => Number(readFileSync(join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0])
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start within 90 s:\n${out}`)), 90_000)
    const onExit = (code: number | null) => {
      clearTimeout(timer)
      reject(new Error(`exited with ${String(code)} before it was up:\n${out}`))
    }
    const check = () => {
      const m = /API\s+http:\/\/localhost:(\d+)/.exec(out)
      if (m !== null && /Stop\s+Ctrl-C/.test(out)) {
        clearTimeout(timer)
        child.off('exit', onExit)
        const port = Number(m[1])
        resolve({ child, port, base: `http://127.0.0.1:${String(port)}`, output: () => out, natsPid, postgresPid })
      }
    }
    child.stdout?.on('data', check)
    child.once('exit', onExit)
  })
}

/** Sends `signal` and resolves with the exit code once the process has ended. */
export function stopWith(child: ChildProcess, signal: NodeJS.Signals): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve(child.exitCode)
      return
    }
    child.once('exit', (code) => resolve(code))
    child.kill(signal)
  })
}

export function superadminToken(env: NodeJS.ProcessEnv): string {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'token'], {
    cwd: root,
    env,
    encoding: 'utf8',
  })
  if (r.status !== 0) throw new Error(`npm run token failed: ${r.stderr}`)
  return r.stdout.trim()
}

export async function pollUntil<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  timeoutMs = 60_000,
  everyMs = 20,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await fn().catch(() => undefined)
    if (v !== undefined) return v
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`)
    await new Promise((r) => setTimeout(r, everyMs))
  }
}
