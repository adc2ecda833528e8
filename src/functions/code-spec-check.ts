import type { Static } from '@sinclair/typebox'
import type { FunctionSpec } from '../../schemas/function.ts'
import type { Config } from '../kernel/config.ts'
import type { FieldIssue } from '../kernel/errors.ts'
import type { SpecCheck } from '../resources/validation.ts'
import { checkPythonCode } from './check-code.ts'

/*
 * A function's saved code must parse and define its entrypoint (check-code.ts), checked with the
 * interpreter the sandboxes run (SANDBOX_PYTHON). A spec check of the functions feature rather than
 * the kind's `validate`, so the kind description imports no feature.
 */
export function codeSpecCheck(config: Pick<Config, 'SANDBOX_PYTHON'>): SpecCheck {
  return async (kind, spec): Promise<FieldIssue[]> => {
    if (kind.kind !== 'function') return []
    // the spec passed the kind's schema before any check runs
    const s = spec as Static<typeof FunctionSpec>
    return checkPythonCode(s.code, s.entrypoint, config.SANDBOX_PYTHON)
  }
}
