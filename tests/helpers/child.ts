import { spawn, type ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'

/*
 * Starts a TypeScript script as a child process (for the kill -9 tests) and resolves with the rest
 * of its first stdout line that starts with `ready`. The child is killed at teardown if still alive.
 */
interface Teardown {
  teardown(fn: () => unknown): void
}

export async function spawnReady(
  t: Teardown,
  script: string,
  env: Record<string, string>,
  readyTimeoutMs = 90_000,
): Promise<{ proc: ChildProcess; ready: string }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  t.teardown(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL')
  })
  const lines = createInterface({ input: proc.stdout as NodeJS.ReadableStream })
  const ready = await new Promise<string>((resolve, reject) => {
    // A child that neither gets ready nor exits (wedged in its start) fails the test by name
    // instead of leaving it to tap's file timeout, which says nothing about where it stopped.
    const timer = setTimeout(() => {
      proc.kill('SIGKILL')
      reject(new Error(`${script} printed no ready line within ${String(readyTimeoutMs / 1000)} s`))
    }, readyTimeoutMs)
    proc.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`${script} exited early (${String(code)})`))
    })
    lines.on('line', (line) => {
      if (!line.startsWith('ready')) return
      clearTimeout(timer)
      resolve(line.slice(5).trim())
    })
  })
  return { proc, ready }
}

export async function kill9(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return
  const exited = new Promise((r) => proc.once('exit', r))
  proc.kill('SIGKILL')
  await exited
}

export async function terminate(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return
  const exited = new Promise((r) => proc.once('exit', r))
  proc.kill('SIGTERM')
  await exited
}
