import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/*
 * Runs the `platform` bin as a child process (as a user would: `node src/command-line/bin.mjs`),
 * with its own config folder, so its credentials file is the test's.
 */
export const BIN = join(import.meta.dirname, '..', '..', 'src', 'command-line', 'bin.mjs')

export interface CliResult {
  code: number | null
  stdout: string
  stderr: string
}

export interface CliHome {
  /** XDG_CONFIG_HOME of the commands run through this home. */
  dir: string
  credentials: string
  run(args: string[], o?: { env?: Record<string, string>; stdin?: string; timeoutMs?: number }): Promise<CliResult>
  /** Starts a long-running command (chat, events tail); the caller reads and ends it. */
  spawn(args: string[], o?: { env?: Record<string, string> }): LiveCli
}

export interface LiveCli {
  proc: ChildProcess
  stdout(): string
  stderr(): string
  /** Resolves when the output (stdout + stderr) matches. */
  waitFor(re: RegExp, timeoutMs?: number): Promise<void>
  exited: Promise<number | null>
}

export function cliHome(t: { teardown(fn: () => unknown): void }, base?: string): CliHome {
  const dir = mkdtempSync(join(tmpdir(), 'platform-cli-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  // no PLATFORM_* from the test runner's own environment, no colours
  const envOf = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => {
    const env: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: dir, NO_COLOR: '1' }
    delete env['PLATFORM_TOKEN']
    delete env['PLATFORM_URL']
    if (base !== undefined) env['PLATFORM_URL'] = base
    return { ...env, ...extra }
  }
  const spawnCli = (args: string[], env: Record<string, string> = {}) =>
    spawn(process.execPath, [BIN, ...args], { env: envOf(env), stdio: ['pipe', 'pipe', 'pipe'] })
  return {
    dir,
    credentials: join(dir, 'agent-platform', 'credentials.json'),
    run(args, o = {}) {
      const proc = spawnCli(args, o.env)
      let stdout = ''
      let stderr = ''
      proc.stdout.on('data', (b: Buffer) => (stdout += b.toString('utf8')))
      proc.stderr.on('data', (b: Buffer) => (stderr += b.toString('utf8')))
      proc.stdin.end(o.stdin ?? '')
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          proc.kill('SIGKILL')
          reject(new Error(`platform ${args.join(' ')} did not end: ${stdout} ${stderr}`))
        }, o.timeoutMs ?? 60_000)
        proc.on('close', (code) => {
          clearTimeout(timer)
          resolve({ code, stdout, stderr })
        })
      })
    },
    spawn(args, o = {}) {
      const proc = spawnCli(args, o.env)
      let stdout = ''
      let stderr = ''
      const waiters: { re: RegExp; resolve(): void }[] = []
      const check = () => {
        for (const w of [...waiters])
          if (w.re.test(stdout + stderr)) {
            waiters.splice(waiters.indexOf(w), 1)
            w.resolve()
          }
      }
      proc.stdout.on('data', (b: Buffer) => {
        stdout += b.toString('utf8')
        check()
      })
      proc.stderr.on('data', (b: Buffer) => {
        stderr += b.toString('utf8')
        check()
      })
      const exited = new Promise<number | null>((resolve) => proc.on('close', (code) => resolve(code)))
      t.teardown(() => {
        if (proc.exitCode === null) proc.kill('SIGKILL')
      })
      return {
        proc,
        stdout: () => stdout,
        stderr: () => stderr,
        exited,
        waitFor(re, timeoutMs = 30_000) {
          if (re.test(stdout + stderr)) return Promise.resolve()
          return new Promise((resolve, reject) => {
            const timer = setTimeout(
              () =>
                reject(
                  new Error(`no ${String(re)} within ${String(timeoutMs)} ms; stdout: ${stdout} stderr: ${stderr}`),
                ),
              timeoutMs,
            )
            waiters.push({
              re,
              resolve: () => {
                clearTimeout(timer)
                resolve()
              },
            })
          })
        },
      }
    },
  }
}
