import { Value } from '@sinclair/typebox/value'
import type { TSchema } from '@sinclair/typebox'
import type { TypeCheck } from '@sinclair/typebox/compiler'
import type { Caller } from '../src/auth/caller.ts'
import { AppError, type FieldIssue } from '../src/kernel/errors.ts'
import { listUnstorable, unstorableReason } from '../src/kernel/storable-text.ts'
import type { TokenVerifier } from './auth.ts'
import type { CompiledRoute } from './compiled-route.ts'
import { MAX_JSON_DEPTH, scanJson } from './json-scan.ts'

/*
 * The input rules of a forwarded request (gateway/README.md "Input rules"), in their order:
 * credentials, text Postgres cannot store, the route's schemas; for a body also size, media type
 * and depth before anything parses it.
 */

/** Text Postgres cannot store (NUL, lone surrogates) is the client's fault: 400 naming every place. */
export const invalidText = (issues: FieldIssue[]): AppError =>
  new AppError(400, 'request.invalid_text', 'text must not contain NUL characters (U+0000) or lone surrogates', {
    issues,
  })

/** Issues for the string values of a flat record (path or query parameters). */
export function textIssues(values: Record<string, unknown>, prefix: string): FieldIssue[] {
  const issues: FieldIssue[] = []
  for (const k in values) {
    const v = values[k]
    const reason = typeof v === 'string' ? unstorableReason(v) : null
    if (reason !== null) issues.push({ path: `${prefix}.${k}`, message: `contains ${reason}` })
  }
  return issues
}

export const issuesOf = (check: TypeCheck<TSchema>, value: unknown, prefix: string): FieldIssue[] =>
  [...check.Errors(value)]
    .slice(0, 20)
    .map((e) => ({ path: `${prefix}${e.path.replace(/^\//, '').replace(/\//g, '.')}`, message: e.message }))

export interface PreludeInput {
  authorization: string
  params: Record<string, string>
  rawQuery: string
  headers?: Record<string, string> | undefined
}

/** Authentication, then path, header and query checks, as for every forwarded route. */
export async function checkPrelude(
  route: CompiledRoute,
  input: PreludeInput,
  verifier: TokenVerifier,
): Promise<{ caller: Caller | null; query: Record<string, unknown> }> {
  let caller: Caller | null = null
  if (route.def.auth) {
    if (input.authorization === '') throw new AppError(401, 'auth.unauthorized', 'authentication required')
    caller = await verifier.verify(input.authorization)
  }
  const paramIssues = textIssues(input.params, 'path')
  if (paramIssues.length > 0) throw invalidText(paramIssues)
  if (input.headers !== undefined) {
    const headerIssues = textIssues(input.headers, 'header')
    if (headerIssues.length > 0) throw invalidText(headerIssues)
  }
  if (route.params !== undefined && !route.params.Check(input.params)) {
    throw new AppError(422, 'request.invalid', 'invalid path parameters', {
      issues: issuesOf(route.params, input.params, ''),
    })
  }
  let query: Record<string, unknown> = {}
  if (route.query !== undefined && input.rawQuery !== '') {
    const picked: Record<string, unknown> = {}
    const search = new URLSearchParams(input.rawQuery)
    if (route.def.strictQuery === true) {
      const known = route.query.keys
      const unknown = [...new Set(search.keys())].filter((k) => !known.includes(k))
      if (unknown.length > 0)
        throw new AppError(422, 'request.invalid', 'unknown query parameters', {
          issues: unknown.slice(0, 20).map((k) => ({ path: k, message: 'unknown query parameter' })),
        })
    }
    for (const key of route.query.keys) {
      const v = search.get(key)
      if (v !== null) picked[key] = v
    }
    const queryIssues = textIssues(picked, 'query')
    if (queryIssues.length > 0) throw invalidText(queryIssues)
    query = Value.Convert(route.query.schema, picked) as Record<string, unknown>
    if (!route.query.check.Check(query))
      throw new AppError(422, 'request.invalid', 'invalid query parameters', {
        issues: issuesOf(route.query.check, query, ''),
      })
  }
  return { caller, query }
}

/**
 * A JSON body as read (null: over the limit while reading) → the bytes to forward, unchanged, and
 * the value they parse to. One byte pass before parsing bounds the depth and finds `\u` escapes of
 * text Postgres rejects.
 */
export function checkJsonBody(
  check: TypeCheck<TSchema>,
  raw: Buffer | null,
  contentType: string,
  maxBodyBytes: number,
): { bytes: Uint8Array; value: unknown } {
  if (raw === null) throw new AppError(413, 'request.too_large', `body larger than ${String(maxBodyBytes)} bytes`)
  if (!contentType.toLowerCase().startsWith('application/json'))
    throw new AppError(415, 'request.unsupported_media_type', 'send the body as application/json')
  const scan = scanJson(raw)
  if (scan === 'too_deep')
    throw new AppError(400, 'request.too_deep', `the body is nested deeper than ${String(MAX_JSON_DEPTH)} levels`)
  let parsed: unknown
  try {
    parsed = JSON.parse(raw.toString('utf8'))
  } catch {
    throw new AppError(400, 'request.malformed_json', 'the body is not valid JSON')
  }
  if (scan === 'unstorable') {
    const found = listUnstorable(parsed, 'body')
    if (found.length > 0) throw invalidText(found.map((at) => ({ path: at.path, message: `contains ${at.reason}` })))
  }
  if (!check.Check(parsed))
    throw new AppError(422, 'request.invalid', 'the body does not match the schema', {
      issues: issuesOf(check, parsed, ''),
    })
  return { bytes: raw, value: parsed }
}
