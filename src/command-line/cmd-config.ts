import { stringify } from 'yaml'
import { optionFlag, optionText, type ParsedArgs } from './args.ts'
import { ApiError, createClient, type Client } from './client.ts'
import { interpolateClientEnv } from './interpolate.ts'
import { readSource, type Io } from './io.ts'
import { hasChanges, renderPlan, type ApplyResult } from './plan-text.ts'

/*
 * `config validate|diff|apply|export` over `/api/v1/config/*` (admin). `diff` is a dry-run apply:
 * the server plans against what it holds, so the plan is exactly what `apply` would do.
 */

export const clientOf = (a: ParsedArgs): Client => {
  const url = optionText(a, 'url')
  return createClient(url === undefined ? {} : { url })
}

const json = (a: ParsedArgs): boolean => optionText(a, 'output') === 'json'

/**
 * The answer, or the body of a refusal that has the answer's shape: a refused apply answers 422
 * with `success: false` and its errors, which is a result to print, not a failed request.
 */
export async function answerOrRefusal<T extends object>(call: () => Promise<T>): Promise<T> {
  try {
    return await call()
  } catch (err) {
    const body = err instanceof ApiError ? err.body : undefined
    if (typeof body === 'object' && body !== null && 'success' in body && 'summary' in body) return body as T
    throw err
  }
}

/** An issue as `path (line L, column C): message`. */
export const issueText = (e: { path: string; message: string; line?: number; column?: number }): string =>
  `${e.path === '' ? '' : e.path}${e.line === undefined ? '' : ` (line ${String(e.line)}, column ${String(e.column ?? 1)})`}${e.path === '' && e.line === undefined ? '' : ': '}${e.message}`

async function configText(a: ParsedArgs): Promise<string> {
  const text = await readSource(a.positional[0] as string)
  return optionFlag(a, 'no-interpolate') ? text : interpolateClientEnv(text, process.env)
}

export async function configValidate(a: ParsedArgs, io: Io): Promise<number> {
  const r = await clientOf(a).json<{
    valid: boolean
    errors: { path: string; message: string; line?: number; column?: number }[]
    warnings?: string[]
  }>('POST', '/api/v1/config/validate', { config: await configText(a) })
  if (json(a)) io.out(`${JSON.stringify(r, null, 2)}\n`)
  else {
    for (const e of r.errors) io.out(`error: ${issueText(e)}\n`)
    for (const w of r.warnings ?? []) io.out(`warning: ${w}\n`)
    io.out(r.valid ? 'Valid.\n' : 'Invalid.\n')
  }
  return r.valid ? 0 : 1
}

async function applyConfig(a: ParsedArgs, dryRun: boolean): Promise<ApplyResult> {
  const config = await configText(a)
  return answerOrRefusal(() =>
    clientOf(a).json<ApplyResult>('POST', '/api/v1/config/apply', { config, dryRun, force: optionFlag(a, 'force') }),
  )
}

export async function configDiff(a: ParsedArgs, io: Io): Promise<number> {
  const r = await applyConfig(a, true)
  io.out(json(a) ? `${JSON.stringify(r, null, 2)}\n` : renderPlan(r, io, { applied: false }))
  if (!r.success) return 1
  return hasChanges(r) ? 2 : 0
}

export async function configApply(a: ParsedArgs, io: Io): Promise<number> {
  const dryRun = optionFlag(a, 'dry-run')
  const r = await applyConfig(a, dryRun)
  io.out(json(a) ? `${JSON.stringify(r, null, 2)}\n` : renderPlan(r, io, { applied: !dryRun }))
  return r.success ? 0 : 1
}

/** The YAML of an answer that is text, `{yaml}`/`{config}` text, or the document as JSON. */
export function yamlOf(body: unknown): string {
  if (typeof body === 'string') return body.endsWith('\n') ? body : `${body}\n`
  if (typeof body === 'object' && body !== null) {
    for (const k of ['yaml', 'config', 'source'])
      if (typeof (body as Record<string, unknown>)[k] === 'string') return yamlOf((body as Record<string, unknown>)[k])
  }
  return stringify(body, { lineWidth: 0 })
}

export async function configExport(a: ParsedArgs, io: Io): Promise<number> {
  io.out(yamlOf(await clientOf(a).json('GET', '/api/v1/config/export')))
  return 0
}
