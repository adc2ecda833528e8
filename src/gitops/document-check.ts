import { AppError, type FieldIssue } from '../kernel/errors.ts'
import type { DocumentResource } from './document-resources.ts'
import type { DocumentIssue } from './parse-document.ts'
import type { Reference } from './references.ts'

/** The answer of checking a document: what `POST /config/validate` and a dry run are made of. */
export interface DocumentCheck<D> {
  valid: boolean
  /** The code of the failure (`config.*` / `package.*`), when not valid. */
  code?: string
  errors: DocumentIssue[]
  warnings: string[]
  document?: D
  /** The resources in apply order (empty when not valid). */
  resources: DocumentResource[]
}

/** What the document layer needs to know of the kinds and of the platform; the caller has them (the resource engine). */
export interface ResourceChecks {
  /** Each kind's `refs`; called only on resources `checkResource` accepted. */
  refs: (kind: string, body: Record<string, unknown>) => readonly Reference[]
  /** Whether the platform has the resource a reference names. */
  exists: (kind: string, ref: string) => boolean
  /** One resource against its kind (paths relative to the resource, `/model` or `model`); none: not checked here. */
  checkResource?: (kind: string, body: Record<string, unknown>) => readonly FieldIssue[]
}

/** A failed step as a check: the AppError's code and issues (its message when it has none). Anything else is a bug and is thrown on. */
export function failedCheck(err: unknown): DocumentCheck<never> {
  if (!(err instanceof AppError)) throw err
  const errors = err.issues !== undefined && err.issues.length > 0 ? err.issues : [{ path: '', message: err.message }]
  return { valid: false, code: err.code, errors, warnings: [], resources: [] }
}
