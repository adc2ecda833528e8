import { spawn } from 'node:child_process'
import type { SandboxDriver, SandboxExit, SandboxProcess, SandboxSpec } from '../driver.ts'
import { resolvePython } from './bubblewrap.ts'
import { runnerArgs, RUNNER_SOURCE } from '../runner-path.ts'

/*
 * TRUSTED_EXECUTOR=inprocess: the runner as a plain Python child owned by the worker process. No
 * isolation beyond a separate process with an empty environment: only for shared_pool functions,
 * which admins mark as trusted. The runner runs in `shared` mode here, so it never kills other
 * processes or wipes /tmp (it is not in namespaces of its own).
 */
export function processDriver(o: { python: string }): SandboxDriver {
  return {
    name: 'process',
    async check() {
      try {
        resolvePython(o.python)
        return { ok: true }
      } catch {
        return { ok: false, reason: `python ${o.python} not found` }
      }
    },
    async start(spec: SandboxSpec): Promise<SandboxProcess> {
      const child = spawn(
        resolvePython(o.python),
        [
          '-I',
          '-S',
          '-B',
          RUNNER_SOURCE,
          ...runnerArgs({ ...spec, mode: 'shared' }, { isolated: false, packagesPath: spec.packagesDir }),
        ],
        {
          stdio: ['pipe', 'pipe', 'inherit'],
          env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8', PYTHONDONTWRITEBYTECODE: '1' },
        },
      )
      const exited = new Promise<SandboxExit>((resolve) => {
        child.on('exit', (code, signal) => resolve({ code, signal }))
        child.on('error', () => resolve({ code: null, signal: 'spawn-error' }))
      })
      return {
        id: spec.id,
        name: `inprocess-${spec.id}`,
        stdin: child.stdin,
        stdout: child.stdout,
        exited,
        async destroy() {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
          await exited
        },
      }
    },
    async close() {},
  }
}
