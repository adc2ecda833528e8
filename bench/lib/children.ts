import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { signalLocalServers, stopLocalServers } from '../../src/platform/local-services.ts'
import type { ChildMessage, ReadyInfo } from '../servers/protocol.ts'

/*
 * Server children: `node --import tsx bench/servers/<script>.ts` with an IPC channel. Every live
 * child is tracked so `stopAllChildren` (called by run.ts on exit, error and signals) leaves none,
 * and then removes the temporary directories made with `tempDir`.
 */
export interface ServerChild {
  name: string
  pid: number
  info: ReadyInfo
  stop(): Promise<void>
}

const live = new Set<ChildProcess>()
const tempDirs = new Set<string>()

/** A fresh directory under os.tmpdir(), mode 0755 (Postgres, run as its own user when we are root, must enter it). */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  chmodSync(dir, 0o755)
  tempDirs.add(dir)
  return dir
}

export function removeTempDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true })
  tempDirs.delete(dir)
}

function waitExit(child: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true)
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs)
    child.once('exit', () => {
      clearTimeout(timer)
      resolve(true)
    })
  })
}

/** SIGTERM (the child closes what it started), then SIGKILL after `graceMs`. */
async function stopProcess(child: ChildProcess, graceMs = 30_000): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    child.kill('SIGTERM')
    if (!(await waitExit(child, graceMs))) {
      child.kill('SIGKILL')
      await waitExit(child, 5_000)
    }
  }
  live.delete(child)
}

export async function stopAllChildren(): Promise<void> {
  await Promise.all([...live].map((c) => stopProcess(c)))
  // the servers a benchmark started in this process (startNats): their own process group, out of a signal's reach
  await stopLocalServers()
  for (const dir of tempDirs) removeTempDir(dir)
}

/** Last resort when the bench process exits: ask the survivors to stop (they finish on their own). */
export function signalAllChildren(): void {
  for (const c of live) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM')
  signalLocalServers()
}

function forwardOutput(child: ChildProcess, name: string, tail: string[]): void {
  const onData = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line.trim() === '') continue
      tail.push(line)
      if (tail.length > 40) tail.shift()
      process.stderr.write(`  [${name}] ${line}\n`)
    }
  }
  child.stdout?.on('data', onData)
  child.stderr?.on('data', onData)
}

/** Extra node flags for the server children, e.g. BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof". */
const nodeArgs = (): string[] => (process.env['BENCH_NODE_ARGS'] ?? '').split(' ').filter(Boolean)

export function startServerChild(
  name: string,
  script: string,
  env: Record<string, string>,
  timeoutMs = 180_000,
): Promise<ServerChild> {
  const child = spawn(
    process.execPath,
    [...nodeArgs(), '--import', 'tsx', join(import.meta.dirname, '..', 'servers', script)],
    {
      cwd: join(import.meta.dirname, '..', '..'),
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      env: { ...process.env, ...env },
    },
  )
  live.add(child)
  const tail: string[] = []
  forwardOutput(child, name, tail)
  return new Promise((resolve, reject) => {
    const failed = (why: string) => {
      clearTimeout(timer)
      void stopProcess(child).finally(() =>
        reject(new Error(`${name}: ${why}${tail.length > 0 ? `\n${tail.join('\n')}` : ''}`)),
      )
    }
    const timer = setTimeout(() => failed(`not ready within ${String(timeoutMs)} ms`), timeoutMs)
    child.once('exit', (code, signal) => failed(`exited during start (${signal ?? `code ${String(code)}`})`))
    child.once('error', (err) => failed(err.message))
    child.on('message', (raw: unknown) => {
      const msg = raw as ChildMessage
      if (msg.type === 'failed') {
        failed(msg.message)
        return
      }
      if (msg.type !== 'ready' || child.pid === undefined) return
      clearTimeout(timer)
      child.removeAllListeners('exit')
      resolve({ name, pid: child.pid, info: msg.info, stop: () => stopProcess(child) })
    })
  })
}

/**
 * The platform as one child process (`servers/platform.ts`, ROLES=all) with its own nats-server,
 * Postgres and data directory `dataDir` (removed when it stops), fresh keys, development settings;
 * `env` adds or overrides settings (LOG_LEVEL, CONNECTOR_HTTP_HOSTS, …).
 */
export function startPlatformChild(dataDir: string, env: Record<string, string> = {}): Promise<ServerChild> {
  return startServerChild('platform', 'platform.ts', {
    NODE_ENV: 'development',
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'warn',
    DATA_DIR: dataDir,
    AUTO_APPLY_CONFIG: 'false',
    SECRET_KEY: randomBytes(32).toString('base64url'),
    ENCRYPTION_KEY: randomBytes(32).toString('base64url'),
    DATABASE_PASSWORD: randomBytes(16).toString('hex'),
    QUEUE_STORE_URL: '',
    DATABASE_HOST: '',
    ROLES: 'all',
    NATS_URL: '',
    DATABASE_URL: '',
    NATS_PREFIX: '',
    BENCH_REMOVE_DATA_DIR: '1',
    ...env,
  })
}
