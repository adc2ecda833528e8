import { AppError } from '../kernel/errors.ts'
import { formatPath } from './document-path.ts'
import type { DocumentIssue, ParsedDocument } from './parse-document.ts'
import { resourceKey } from './resource-key.ts'
import { sectionKinds, type SectionName } from './section-kinds.ts'

/** One resource of a document, where it is and how references name it. */
export interface DocumentResource {
  section: SectionName
  index: number
  kind: string
  /** `<namespace>/<name>`, or the name / email / package name (resource-key.ts). */
  key: string
  /** `spec.agents[2]`. */
  path: string
  body: Record<string, unknown>
}

/**
 * The resources of a document's spec, section by section in the order sections are applied
 * (section-kinds.ts), each in document order. The same resource twice is refused, naming both
 * places: which of the two should win is not for the platform to guess.
 */
export function documentResources(
  doc: ParsedDocument,
  spec: Readonly<Partial<Record<string, readonly Record<string, unknown>[]>>>,
): DocumentResource[] {
  const out: DocumentResource[] = []
  const firstAt = new Map<string, string>()
  const twice: DocumentIssue[] = []
  for (const [section, kind] of Object.entries(sectionKinds) as [SectionName, string][]) {
    const items = spec[section] ?? []
    items.forEach((body, index) => {
      const key = resourceKey(kind, body)
      const path = formatPath(['spec', section, index])
      const id = `${kind} ${key}`
      const earlier = firstAt.get(id)
      if (earlier !== undefined) twice.push(doc.issueAt(path, `${id} is defined twice (first at ${earlier})`))
      else if (!key.endsWith('/') && key !== '') firstAt.set(id, path)
      out.push({ section, index, kind, key, path, body })
    })
  }
  const first = twice[0]
  if (first !== undefined) throw AppError.of('config.invalid_document', first.message, { issues: twice })
  return out
}
