import { checkResources } from './check-resources.ts'
import { failedCheck, type DocumentCheck, type ResourceChecks } from './document-check.ts'
import type { DocumentLimits } from './document-limits.ts'
import { validatePackageDocument, type PackageDocument, type VariableDeclaration } from './package-schema.ts'
import { parseYamlDocument } from './parse-document.ts'
import { readVariableDeclarations } from './read-variable-declarations.ts'
import { requiresInput, substitutePackageVariables } from './substitute-variables.ts'

export interface PackageCheck extends DocumentCheck<PackageDocument> {
  /** The declarations (preview's `variables`); empty when they cannot be read. */
  variables: VariableDeclaration[]
  /** Preview's `requires_input`: a required variable has neither a value nor a default. */
  requiresInput: boolean
  /** The values to keep with the installed package (secrets masked), when valid. */
  stored?: Record<string, string>
}

/**
 * A package's text checked end to end, as preview and install need it: its variables declared and
 * given, substituted into the text, the result parsed within the limits, its envelope (forbidden
 * sections named), each resource against its kind, references.
 */
export function checkPackageText(
  text: string,
  values: Readonly<Record<string, unknown>>,
  options: ResourceChecks & {
    limits: DocumentLimits
    resourceExists?: (resource: string, ref: string) => boolean
  },
): PackageCheck {
  let variables: VariableDeclaration[] = []
  try {
    variables = readVariableDeclarations(text, options.limits)
    const substituted = substitutePackageVariables(text, values, { ...options, declarations: variables })
    const doc = parseYamlDocument(substituted.text, options.limits)
    const pkg = validatePackageDocument(doc)
    const { resources, warnings } = checkResources(doc, pkg.spec, options)
    return {
      valid: true,
      errors: [],
      warnings,
      document: pkg,
      resources,
      variables,
      requiresInput: false,
      stored: substituted.stored,
    }
  } catch (err) {
    return { ...failedCheck(err), variables, requiresInput: requiresInput(variables, values) }
  }
}
