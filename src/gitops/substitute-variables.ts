import { AppError, type FieldIssue } from '../kernel/errors.ts'
import type { DocumentLimits } from './document-limits.ts'
import { issuesSummary } from './issues-summary.ts'
import type { VariableDeclaration } from './package-schema.ts'
import { PACKAGE_PLACEHOLDER } from './package-placeholders.ts'
import { readVariableDeclarations } from './read-variable-declarations.ts'
import { variableValue } from './variable-value.ts'

export interface SubstitutedPackage {
  /** The package text with every placeholder replaced: what is parsed and applied. */
  text: string
  declarations: VariableDeclaration[]
  /** Each declared variable's value as put into the text (supplied, else its default, else empty). */
  values: Record<string, string>
  /** The values to keep with the installed package: a secret's is the mask `***`. */
  stored: Record<string, string>
}

/** Whether a preview must ask for something: a required variable without a default and without a value. */
export function requiresInput(
  declarations: readonly VariableDeclaration[],
  values: Readonly<Record<string, unknown>>,
): boolean {
  return declarations.some((d) => d.required === true && d.default === undefined && values[d.name] === undefined)
}

/**
 * `${{ variables.NAME }}` replaced in the package text before it is parsed: plain string
 * replacement (no template language), so stored resources hold literal values. Values are checked
 * against their declarations; a required variable must have a value or a default; a value for a
 * variable the package does not declare, and a placeholder naming one, are refused (a typo would
 * otherwise install an empty field).
 */
export function substitutePackageVariables(
  text: string,
  supplied: Readonly<Record<string, unknown>>,
  options: {
    limits: DocumentLimits
    resourceExists?: (resource: string, ref: string) => boolean
    /** Already read from this text (readVariableDeclarations): not read again. */
    declarations?: VariableDeclaration[]
  },
): SubstitutedPackage {
  const declarations = options.declarations ?? readVariableDeclarations(text, options.limits)
  const byName = new Map(declarations.map((d) => [d.name, d]))
  const fail = (code: string, issues: FieldIssue[]): never => {
    throw AppError.of(code, issuesSummary(issues), { issues })
  }
  const unknown = Object.keys(supplied).filter((name) => !byName.has(name))
  if (unknown.length > 0)
    fail(
      'package.variable_unknown',
      unknown.map((name) => ({ path: `variables.${name}`, message: `the package declares no variable ${name}` })),
    )
  const undeclared = [...text.matchAll(PACKAGE_PLACEHOLDER)].filter((m) => !byName.has(m[1] as string))
  if (undeclared.length > 0)
    fail(
      'package.variable_undeclared',
      undeclared.map((m) => {
        const before = text.slice(0, m.index)
        const line = before.split('\n').length
        const column = m.index - before.lastIndexOf('\n')
        return {
          path: `variables.${m[1] as string}`,
          message: `${m[0]} names a variable the package does not declare in spec.variables (line ${String(line)}, column ${String(column)})`,
        }
      }),
    )
  const values: Record<string, string> = {}
  const stored: Record<string, string> = {}
  const missing: FieldIssue[] = []
  const invalid: FieldIssue[] = []
  for (const d of declarations) {
    const given = supplied[d.name] ?? d.default
    if (given === undefined) {
      if (d.required === true)
        missing.push({ path: `variables.${d.name}`, message: `the variable ${d.name} is required` })
      values[d.name] = ''
    } else {
      const checked = variableValue(d, given, options.resourceExists)
      if (checked.ok) values[d.name] = checked.text
      else invalid.push({ path: `variables.${d.name}`, message: `${d.name} (${d.type}): ${checked.message}` })
    }
    stored[d.name] = d.type === 'secret' && values[d.name] !== '' ? '***' : (values[d.name] ?? '')
  }
  if (missing.length > 0) fail('package.variable_required', missing)
  if (invalid.length > 0) fail('package.variable_invalid', invalid)
  return {
    text: text.replace(PACKAGE_PLACEHOLDER, (_m, name: string) => values[name] ?? ''),
    declarations,
    values,
    stored,
  }
}
