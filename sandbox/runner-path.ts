import { join } from 'node:path'
import type { SandboxSpec } from './driver.ts'

/* Where the runner lives in the checkout, and the command-line flags every driver passes to it. */
export const RUNNER_SOURCE = join(import.meta.dirname, 'runner', 'runner.py')

export function runnerArgs(spec: SandboxSpec, o: { isolated: boolean; packagesPath?: string | undefined }): string[] {
  return [
    '--mode',
    spec.mode,
    ...(o.isolated ? ['--isolated'] : []),
    ...(spec.singleUse === true ? ['--single-use'] : []),
    '--memory-mb',
    String(spec.limits.memoryMb),
    '--file-mb',
    String(spec.limits.fileMb),
    '--max-procs',
    String(spec.limits.maxProcs),
    '--max-files',
    String(spec.limits.maxFiles),
    ...(o.packagesPath === undefined ? [] : ['--packages', o.packagesPath]),
  ]
}
