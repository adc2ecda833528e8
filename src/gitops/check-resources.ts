import { AppError } from '../kernel/errors.ts'
import type { ResourceChecks } from './document-check.ts'
import { parsePath } from './document-path.ts'
import { documentResources, type DocumentResource } from './document-resources.ts'
import type { DocumentIssue, ParsedDocument } from './parse-document.ts'
import { resolveReferences } from './references.ts'

/**
 * The resources of a checked envelope: listed (the same one twice refused), each checked against
 * its kind, their references resolved. Dangling references refuse the document
 * (`config.dangling_reference`); a cycle is a warning, since nothing on the platform checks a
 * reference when it is written: both ends are created, then both work.
 */
export function checkResources(
  doc: ParsedDocument,
  spec: Readonly<Partial<Record<string, readonly Record<string, unknown>[]>>>,
  checks: ResourceChecks,
): { resources: DocumentResource[]; warnings: string[] } {
  const resources = documentResources(doc, spec)
  const invalid: DocumentIssue[] = []
  if (checks.checkResource !== undefined)
    for (const r of resources) {
      // a schema check may say several things of one field (missing, then not a string): the first is enough
      const seen = new Set<string>()
      for (const issue of checks.checkResource(r.kind, r.body)) {
        const at = doc.issueAt([...parsePath(r.path), ...parsePath(issue.path)], `${r.kind} ${r.key}: ${issue.message}`)
        if (!seen.has(at.path)) invalid.push(at)
        seen.add(at.path)
      }
    }
  const firstInvalid = invalid[0]
  if (firstInvalid !== undefined)
    throw AppError.of('config.invalid_document', `${firstInvalid.path}: ${firstInvalid.message}`, { issues: invalid })
  const resolved = resolveReferences(resources, { ...checks, doc })
  const dangling = resolved.dangling[0]
  if (dangling !== undefined)
    throw AppError.of('config.dangling_reference', dangling.message, { issues: resolved.dangling })
  return { resources: resolved.ordered, warnings: resolved.cycles.map((c) => `${c.path}: ${c.message}`) }
}
