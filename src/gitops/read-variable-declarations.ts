import { Type as T } from '@sinclair/typebox'
import { AppError } from '../kernel/errors.ts'
import { checkEnvelope } from './check-envelope.ts'
import type { DocumentLimits } from './document-limits.ts'
import { VariableDeclaration } from './package-schema.ts'
import { PACKAGE_PLACEHOLDER } from './package-placeholders.ts'
import { parseYamlDocument, type DocumentIssue } from './parse-document.ts'
import { variableValue } from './variable-value.ts'

// Only `spec.variables` is read here; the rest of the package is checked once its variables are in.
const Declarations = T.Object({ spec: T.Optional(T.Object({ variables: T.Optional(T.Array(VariableDeclaration)) })) })

/**
 * The variables a package declares, read before its variables are substituted (preview shows them,
 * install needs them to check the values). Each placeholder is replaced by its bare name for this
 * reading, which keeps the text valid YAML wherever the placeholder stands (a plain word is a valid
 * scalar in every context, quoted or not). A declaration must be usable: enum with choices,
 * resource_ref with its resource, a pattern that compiles, a default its own type accepts, one
 * declaration per name.
 */
export function readVariableDeclarations(text: string, limits: DocumentLimits): VariableDeclaration[] {
  const doc = parseYamlDocument(
    text.replace(PACKAGE_PLACEHOLDER, (_m, name: string) => name),
    limits,
  )
  const value = doc.value as { spec?: { variables?: unknown } } | null
  const variables = value !== null && typeof value === 'object' ? value.spec?.variables : undefined
  if (variables === undefined) return []
  checkEnvelope(Declarations, doc, { spec: { variables } })
  const declarations = variables as VariableDeclaration[]
  const issues: DocumentIssue[] = []
  const seen = new Set<string>()
  declarations.forEach((d, i) => {
    const before = issues.length
    const at = (field: string, message: string) => issues.push(doc.issueAt(['spec', 'variables', i, field], message))
    if (seen.has(d.name)) at('name', `the variable ${d.name} is declared twice`)
    seen.add(d.name)
    if (d.type === 'enum' && d.choices === undefined) at('choices', 'an enum variable needs its choices')
    if (d.type === 'resource_ref' && d.resource === undefined)
      at('resource', 'a resource_ref variable needs its resource')
    if (d.pattern !== undefined) {
      if (!compiles(d.pattern)) at('pattern', 'not a regular expression')
    }
    if (issues.length === before && d.default !== undefined) {
      const checked = variableValue(d, d.default)
      if (!checked.ok) at('default', `the default does not fit the variable: ${checked.message}`)
    }
  })
  const first = issues[0]
  if (first !== undefined) throw AppError.of('config.invalid_document', `${first.path}: ${first.message}`, { issues })
  return declarations
}

function compiles(pattern: string): boolean {
  try {
    return new RegExp(pattern, 'u') instanceof RegExp
  } catch {
    return false
  }
}
