import type { Static, TObject } from '@sinclair/typebox'
import type { TypeCheck } from '@sinclair/typebox/compiler'
import { can, type Principal } from '../auth/principal.ts'
import { forbidden, invalid, type FieldIssue } from '../kernel/errors.ts'
import { canonicalJson } from './canonical-json.ts'
import type { CompiledChecks } from './engine.ts'
import type { AnyKind } from './kind.ts'
import { resourcePermission, type ResourceMeta } from './permissions.ts'

/** A compiled check's errors as field issues (`/a/b` → `a.b`). */
export function validationIssues(check: TypeCheck<TObject>, value: unknown): FieldIssue[] {
  return [...check.Errors(value)].map((e) => ({
    path: e.path.replace(/^\//, '').replace(/\//g, '.'),
    message: e.message,
  }))
}

/**
 * A rule on a kind's spec that needs what the kind description may not hold (it stays free of
 * configuration, I/O and feature code so the gateway can import it and no kind imports a
 * feature): a feature contributes it with its own settings and the platform's database
 * (`specChecks` of its Feature, e.g. src/files/filter-cap.ts for collections) and the roles hand
 * the list to the resource engine. Each check looks at `kind.kind` and answers [] for the others.
 */
export type SpecCheck = (kind: AnyKind, spec: Record<string, unknown>) => FieldIssue[] | Promise<FieldIssue[]>

/**
 * The spec against the kind's schema, then (only when that passes) the kind's own `validate` and
 * the features' checks, in list order: all of them, so one answer names every issue of a spec
 * whose shape is right (a function's bad schema and its bad code together).
 */
export async function assertValid(
  checks: CompiledChecks,
  kind: AnyKind,
  spec: Record<string, unknown>,
  specChecks: readonly SpecCheck[],
): Promise<void> {
  const issues = validationIssues(checks.spec, spec)
  if (issues.length === 0) {
    issues.push(...(await kind.validate(spec as Static<TObject>)))
    for (const check of specChecks) issues.push(...(await check(kind, spec)))
  }
  if (issues.length > 0) throw invalid(`invalid ${kind.kind}`, issues)
}

/** Refuses a change of the kind's admin fields by someone without the `:all` permission. */
export function assertAdminFields(
  p: Principal,
  kind: AnyKind,
  action: 'create' | 'update',
  m: ResourceMeta,
  before: Record<string, unknown>,
  after: Record<string, unknown>,
): void {
  if (kind.adminFields.length === 0) return
  const changed = kind.adminFields.filter((f) => canonicalJson(before[f]) !== canonicalJson(after[f]))
  if (changed.length > 0 && !can(p, resourcePermission(kind, action, m, 'all'))) {
    throw forbidden(`only administrators may set ${changed.join(', ')}`, 'resource.admin_field')
  }
}
