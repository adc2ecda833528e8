import type { TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { AppError } from '../kernel/errors.ts'
import type { PathSegment } from './document-path.ts'
import { issuesSummary } from './issues-summary.ts'
import type { DocumentIssue, ParsedDocument } from './parse-document.ts'

interface SchemaShape {
  type?: string
  properties?: Record<string, SchemaShape>
  additionalProperties?: boolean
  items?: SchemaShape
}

/**
 * Checks a document's value against its envelope schema. Keys the envelope does not know are
 * named first, with the keys it does know (`config.unknown_key`): a typo in a section name would
 * otherwise drop the whole section silently. Any other mismatch answers `config.invalid_document`,
 * one issue per path, each with its line and column.
 */
export function checkEnvelope(schema: TSchema, doc: ParsedDocument, value: unknown): void {
  const unknown: DocumentIssue[] = []
  unknownKeys(schema as SchemaShape, value, [], doc, unknown)
  if (unknown.length > 0)
    throw AppError.of('config.unknown_key', issuesSummary(unknown), {
      issues: unknown,
    })
  const seen = new Set<string>()
  const issues: DocumentIssue[] = []
  for (const e of Value.Errors(schema, value)) {
    if (seen.has(e.path)) continue
    seen.add(e.path)
    issues.push(doc.issueAt(e.path, e.message))
  }
  if (issues.length > 0) throw AppError.of('config.invalid_document', issuesSummary(issues), { issues })
}

// The envelope schemas are a few levels deep and resources are opaque records there: the recursion is bounded by the schema.
function unknownKeys(
  schema: SchemaShape,
  value: unknown,
  path: PathSegment[],
  doc: ParsedDocument,
  out: DocumentIssue[],
): void {
  if (schema.type === 'array' && schema.items !== undefined && Array.isArray(value)) {
    const items = schema.items
    value.forEach((v, i) => unknownKeys(items, v, [...path, i], doc, out))
    return
  }
  if (schema.type !== 'object' || schema.properties === undefined) return
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return
  const known = Object.keys(schema.properties)
  for (const [key, v] of Object.entries(value)) {
    const sub = schema.properties[key]
    if (sub !== undefined) unknownKeys(sub, v, [...path, key], doc, out)
    else if (schema.additionalProperties === false)
      out.push(doc.issueAt([...path, key], `unknown key \`${key}\` (known: ${known.join(', ')})`))
  }
}
