import type { Static } from '@sinclair/typebox'
import type { ConnectorOperation } from '../../schemas/connector.ts'
import { invalid } from '../kernel/errors.ts'

/*
 * One operation call → method, URL, headers and body (pure: no I/O). Path values are
 * percent-encoded one segment each and may not be `.` or `..` (no walking out of the operation's
 * path); query values are appended (arrays repeat the key); header values are checked for line
 * breaks. Parameters without a location go into the body (see `body_mapping`).
 */
type Operation = Static<typeof ConnectorOperation>

export interface BuiltRequest {
  method: string
  url: string
  headers: Record<string, string>
  body: string | undefined
}

/** Headers neither a connector nor a parameter may set: the client owns them. */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'upgrade',
  'te',
  'trailer',
  'keep-alive',
  'proxy-authorization',
  'expect',
])

const text = (v: unknown): string =>
  typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : JSON.stringify(v)

function setPath(target: Record<string, unknown>, dotted: string, value: unknown): void {
  const parts = dotted.split('.')
  let at = target
  for (const part of parts.slice(0, -1)) {
    if (part === '__proto__' || part === 'constructor' || part === 'prototype')
      throw invalid(`body_mapping: ${dotted} is not allowed`)
    const next = at[part]
    if (typeof next !== 'object' || next === null || Array.isArray(next)) at[part] = {}
    at = at[part] as Record<string, unknown>
  }
  const last = parts.at(-1) as string
  if (last === '__proto__' || last === 'constructor' || last === 'prototype')
    throw invalid(`body_mapping: ${dotted} is not allowed`)
  at[last] = value
}

export function headerIssue(name: string, value: string): string | null {
  if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(name)) return `header name ${JSON.stringify(name)} is not valid`
  if (RESERVED_HEADERS.has(name.toLowerCase())) return `header ${name} is set by the platform`
  if (/[\r\n\0]/.test(value)) return `header ${name} holds a line break`
  return null
}

export function buildRequest(
  baseUrl: string,
  staticHeaders: Record<string, string>,
  op: Operation,
  input: Record<string, unknown>,
): BuiltRequest {
  const locations = op.locations ?? {}
  const issues: { path: string; message: string }[] = []
  const path = op.path.replace(/\{([^{}/]+)\}/g, (_m, name: string) => {
    const v = input[name]
    if (v === undefined || v === null) {
      issues.push({ path: `input.${name}`, message: 'path parameter is required' })
      return ''
    }
    const s = text(v)
    if (s === '' || s === '.' || s === '..')
      issues.push({ path: `input.${name}`, message: 'not a usable path segment' })
    return encodeURIComponent(s)
  })
  const url = new URL(`${baseUrl.replace(/\/+$/, '')}${path}`)
  const headers: Record<string, string> = {}
  for (const [k, v] of Object.entries(staticHeaders)) {
    const issue = headerIssue(k, v)
    if (issue !== null) issues.push({ path: `headers.${k}`, message: issue })
    else headers[k.toLowerCase()] = v
  }
  const bodyParams: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(input)) {
    if (value === undefined) continue
    const where = locations[name]
    if (where === 'path') continue
    if (where === 'query') {
      for (const item of Array.isArray(value) ? value : [value]) url.searchParams.append(name, text(item))
    } else if (where === 'header') {
      const v = text(value)
      const issue = headerIssue(name, v)
      if (issue !== null) issues.push({ path: `input.${name}`, message: issue })
      else headers[name.toLowerCase()] = v
    } else bodyParams[name] = value
  }
  if (issues.length > 0)
    throw invalid('the operation cannot be called with this input', issues, 'connector.invalid_input')

  let payload: unknown = undefined
  const mapping = op.body_mapping ?? null
  if (mapping === null) {
    if (Object.keys(bodyParams).length > 0) payload = bodyParams
  } else {
    const mapped: Record<string, unknown> = {}
    for (const [field, param] of Object.entries(mapping)) {
      if (!(param in bodyParams)) continue
      if (field === '$') payload = bodyParams[param]
      else setPath(mapped, field, bodyParams[param])
    }
    if (payload === undefined && Object.keys(mapped).length > 0) payload = mapped
  }
  let body: string | undefined
  if (payload !== undefined && op.method !== 'GET' && op.method !== 'HEAD') {
    if (op.body_encoding === 'form') {
      const form = new URLSearchParams()
      if (typeof payload === 'object' && payload !== null && !Array.isArray(payload)) {
        for (const [k, v] of Object.entries(payload))
          for (const item of Array.isArray(v) ? v : [v]) form.append(k, text(item))
      }
      body = form.toString()
      headers['content-type'] = 'application/x-www-form-urlencoded'
    } else {
      body = JSON.stringify(payload)
      headers['content-type'] = 'application/json'
    }
  }
  headers['accept'] ??= 'application/json, */*;q=0.5'
  return { method: op.method, url: url.toString(), headers, body }
}
