import type { FieldIssue } from '../kernel/errors.ts'
import type { SpecCheck } from '../resources/validation.ts'
import { iconIssues } from './icon-check.ts'

/*
 * The icon of an agent or a function, checked on every save (icon-check.ts says what passes). A
 * spec check of the files feature rather than the kinds' `validate`, so no kind imports a feature;
 * the issue paths are the ones each kind always answered (`icon` for agents, `/icon` for functions).
 */
const PATHS: Readonly<Record<string, string>> = { agent: 'icon', function: '/icon' }

export const iconSpecCheck: SpecCheck = async (kind, spec): Promise<FieldIssue[]> => {
  const path = PATHS[kind.kind]
  if (path === undefined) return []
  // the spec passed the kind's schema (a string or null) before any check runs
  return iconIssues(path, spec['icon'] as string | null | undefined)
}
