import type { FieldIssue } from '../kernel/errors.ts'

const SHOWN = 3

/** An error's detail from its issues: the first few, then how many more (the issues themselves go in `errors`). */
export function issuesSummary(issues: readonly FieldIssue[]): string {
  const shown = issues.slice(0, SHOWN).map((i) => (i.path === '' ? i.message : `${i.path}: ${i.message}`))
  const more = issues.length - SHOWN
  return more > 0 ? `${shown.join('; ')}; and ${String(more)} more` : shown.join('; ')
}
