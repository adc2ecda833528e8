import { AppError } from '../kernel/errors.ts'
import type { PathSegment } from './document-path.ts'
import type { DocumentIssue, ParsedDocument } from './parse-document.ts'

// `$${VAR}` first, so that the escape is never read as `$` followed by a variable
const PLACEHOLDER = /\$\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g

/**
 * `${VAR}` in the string values of a config, from the environment. Only values are read (keys are
 * names the document's shape decides), the result is always a string (`port: ${PORT}` stays
 * `"8080"`; the kind's schema says whether a string is right there), and `$${VAR}` is the literal
 * text `${VAR}`. Every missing variable is named, with where it is used; none is replaced by an
 * empty string, which would apply a config that silently lost a credential.
 */
export function interpolateEnv(
  doc: ParsedDocument,
  env: Readonly<Record<string, string | undefined>>,
  value: unknown = doc.value,
): unknown {
  const missing: DocumentIssue[] = []
  const names = new Set<string>()
  const walk = (v: unknown, path: PathSegment[]): unknown => {
    if (typeof v === 'string') return replaceIn(v, path)
    if (Array.isArray(v)) return v.map((item, i) => walk(item, [...path, i]))
    if (v !== null && typeof v === 'object')
      return Object.fromEntries(Object.entries(v).map(([k, item]) => [k, walk(item, [...path, k])]))
    return v
  }
  const replaceIn = (text: string, path: PathSegment[]): string =>
    text.replace(PLACEHOLDER, (whole, escaped: string | undefined, name: string | undefined) => {
      if (escaped !== undefined) return `\${${escaped}}`
      const found = env[name as string]
      if (found !== undefined) return found
      names.add(name as string)
      missing.push(doc.issueAt(path, `the environment variable ${name as string} is not set`))
      return whole
    })
  // the depth was bounded when the document was parsed: this recursion cannot run away
  const out = walk(value, [])
  const first = missing[0]
  if (first !== undefined) {
    throw AppError.of(
      'config.missing_variable',
      `environment variable${names.size > 1 ? 's' : ''} not set: ${[...names].join(', ')} (first at ${first.path}${first.line === undefined ? '' : `, line ${String(first.line)}, column ${String(first.column)}`})`,
      { issues: missing },
    )
  }
  return out
}
