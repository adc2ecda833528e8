import { createHash } from 'node:crypto'
import type { TObject } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import '../../schemas/formats.ts'
import { AppError, type FieldIssue } from '../kernel/errors.ts'
import { canonicalJson } from '../resources/canonical-json.ts'
import { validationIssues } from '../resources/validation.ts'

/*
 * What the config kinds of the areas with tables of their own (webhooks, schedules, database
 * triggers, roles, users, dependencies) share: the checksum of a body and the way their checks,
 * written for the API (they throw), answer field issues for `ConfigKind.validate`.
 */

/** SHA-256 of the canonical JSON of a body (keys sorted at every level): equal bodies hash equally. */
export const bodyChecksum = (body: Readonly<Record<string, unknown>>): string =>
  createHash('sha256').update(canonicalJson(body)).digest('hex')

/** A body's mismatches with an API body schema, as field issues (a compiled check per schema, kept). */
export function bodyIssues(schema: TObject, body: unknown): FieldIssue[] {
  let check = compiled.get(schema)
  if (check === undefined) {
    check = TypeCompiler.Compile(schema)
    compiled.set(schema, check)
  }
  return validationIssues(check, body)
}
const compiled = new WeakMap<TObject, ReturnType<typeof TypeCompiler.Compile<TObject>>>()

/**
 * Runs checks that throw as the API's do and answers what they refused as issues (an error that is
 * not an AppError is a bug and is thrown on).
 */
export async function issuesOf(check: () => unknown): Promise<FieldIssue[]> {
  try {
    await check()
    return []
  } catch (err) {
    if (!(err instanceof AppError)) throw err
    return err.issues !== undefined && err.issues.length > 0
      ? err.issues.map((i) => ({ path: i.path, message: `${err.message}: ${i.message}` }))
      : [{ path: '', message: err.message }]
  }
}
