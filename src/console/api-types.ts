/*
 * The console's API types, generated from the platform's own OpenAPI documents (gateway/openapi.ts)
 * and the resource kinds: `console/src/api/types.generated.ts`. A changed route changes the file,
 * and a console page that no longer fits fails the console's type-check; the test
 * tests/console/api-types.test.ts fails when the committed file is stale (regenerate with
 * `npm run --silent cli -- console-api --write`). Written here rather than with
 * openapi-typescript, which does not accept our TypeScript version.
 */

/** A JSON Schema as the OpenAPI documents hold it (TypeBox output, `$id`s removed). */
type Schema = Record<string, unknown>

/** What a resource page needs of a kind, generated from the kind description (`defineKind`). */
export interface ResourceKindInfo {
  kind: string
  plural: string
  title: string
  description: string
  addressing: 'namespaced' | 'named'
  updateMethod: 'PUT' | 'PATCH'
  adminOnly: boolean
  secrets: string[]
  versioned: boolean
}

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/
const key = (k: string): string => (IDENT.test(k) ? k : JSON.stringify(k))

/** TypeScript text for a JSON Schema (the subset TypeBox emits). Unknown shapes become `unknown`. */
export function schemaToTs(schema: unknown, indent = ''): string {
  if (schema === undefined || schema === null || typeof schema !== 'object') return 'unknown'
  const s = schema as Schema
  if (typeof s['$ref'] === 'string') {
    const name = s['$ref'].split('/').pop() ?? ''
    return IDENT.test(name) ? name : 'unknown'
  }
  if ('const' in s) return JSON.stringify(s['const'])
  if (Array.isArray(s['enum'])) return s['enum'].map((v) => JSON.stringify(v)).join(' | ') || 'never'
  for (const combo of ['anyOf', 'oneOf'] as const) {
    const parts = s[combo]
    if (Array.isArray(parts)) return unionOf(parts.map((p) => schemaToTs(p, indent)))
  }
  if (Array.isArray(s['allOf'])) return (s['allOf'] as unknown[]).map((p) => schemaToTs(p, indent)).join(' & ')
  const type = s['type']
  if (Array.isArray(type)) return unionOf(type.map((t) => schemaToTs({ ...s, type: t }, indent)))
  switch (type) {
    case 'string':
      return 'string'
    case 'integer':
    case 'number':
      return 'number'
    case 'boolean':
      return 'boolean'
    case 'null':
      return 'null'
    case 'array': {
      const items = s['items']
      if (Array.isArray(items)) return `[${items.map((i) => schemaToTs(i, indent)).join(', ')}]`
      const inner = schemaToTs(items, indent)
      return /^[A-Za-z0-9_$"]+$/.test(inner) ? `${inner}[]` : `Array<${inner}>`
    }
    case 'object':
      return objectToTs(s, indent)
    default:
      return 'unknown'
  }
}

function unionOf(parts: string[]): string {
  const unique = [...new Set(parts)]
  if (unique.includes('unknown')) return 'unknown'
  return unique.length === 0 ? 'never' : unique.join(' | ')
}

function objectToTs(s: Schema, indent: string): string {
  const props = (s['properties'] ?? {}) as Record<string, unknown>
  const required = new Set((s['required'] as string[] | undefined) ?? [])
  const inner = `${indent}  `
  const lines = Object.entries(props).map(
    ([k, v]) => `${inner}${key(k)}${required.has(k) ? '' : '?'}: ${schemaToTs(v, inner)}`,
  )
  const pattern = s['patternProperties'] as Record<string, unknown> | undefined
  const extra = s['additionalProperties']
  let index: string | undefined
  if (pattern !== undefined) index = unionOf(Object.values(pattern).map((v) => schemaToTs(v, inner)))
  else if (extra !== undefined && extra !== false) index = extra === true ? 'unknown' : schemaToTs(extra, inner)
  else if (Object.keys(props).length === 0 && extra === undefined) index = 'unknown'
  if (index !== undefined) {
    if (lines.length === 0) return `Record<string, ${index}>`
    lines.push(`${inner}[key: string]: unknown`)
  }
  if (lines.length === 0) return 'Record<string, never>'
  return `{\n${lines.join('\n')}\n${indent}}`
}

interface Operation {
  operationId: string
  parameters?: { name: string; in: string; required?: boolean; schema?: unknown }[]
  requestBody?: { content?: Record<string, { schema?: unknown }> }
  responses?: Record<string, { content?: Record<string, { schema?: unknown }> }>
}

function paramsOf(op: Operation, where: 'path' | 'query'): string {
  const ps = (op.parameters ?? []).filter((p) => p.in === where)
  if (ps.length === 0) return 'Record<string, never>'
  const fields = ps.map(
    (p) => `      ${key(p.name)}${p.required === true ? '' : '?'}: ${schemaToTs(p.schema, '      ')}`,
  )
  return `{\n${fields.join('\n')}\n    }`
}

function successOf(op: Operation): { status: number; type: string } {
  const ok = Object.keys(op.responses ?? {})
    .map(Number)
    .filter((n) => n >= 200 && n < 300)
    .sort((a, b) => a - b)
  const status = ok[0] ?? 200
  const content = op.responses?.[String(status)]?.content
  if (content === undefined) return { status, type: 'void' }
  const json = content['application/json']
  return { status, type: json === undefined ? 'string' : schemaToTs(json.schema, '    ') }
}

/** The file's text: one entry per operation (by route id), the kinds, and the error body. */
export function generateApiTypes(
  documents: readonly Record<string, unknown>[],
  kinds: readonly ResourceKindInfo[],
): string {
  const out: string[] = [
    '/* eslint-disable */',
    '// Generated from the platform OpenAPI documents and resource kinds by',
    '// `npm run --silent cli -- console-api --write` (src/console/api-types.ts). Do not edit:',
    '// tests/console/api-types.test.ts fails when this file is stale.',
    '',
  ]
  const ops: string[] = []
  let errorBody: unknown
  for (const doc of documents) {
    const components = doc['components'] as { schemas?: Record<string, unknown> } | undefined
    errorBody ??= components?.schemas?.['ErrorBody']
    const paths = doc['paths'] as Record<string, Record<string, Operation>>
    for (const [path, methods] of Object.entries(paths)) {
      for (const [method, op] of Object.entries(methods)) {
        const body = op.requestBody?.content?.['application/json']?.schema
        const success = successOf(op)
        const stream = op.responses?.[String(success.status)]?.content?.['text/event-stream'] !== undefined
        ops.push(
          [
            `  ${JSON.stringify(op.operationId)}: {`,
            `    method: ${JSON.stringify(method.toUpperCase())}`,
            `    path: ${JSON.stringify(path)}`,
            `    params: ${paramsOf(op, 'path')}`,
            `    query: ${paramsOf(op, 'query')}`,
            `    body: ${body === undefined ? 'never' : schemaToTs(body, '    ')}`,
            `    status: ${String(success.status)}`,
            `    response: ${stream ? 'EventStream' : success.type}`,
            '  }',
          ].join('\n'),
        )
      }
    }
  }
  out.push(`export type ErrorBody = ${schemaToTs(errorBody)}`, '')
  out.push('/** A Server-Sent Events answer: read it with openEventStream (console/src/api/sse.ts). */')
  out.push("export type EventStream = { readonly stream: 'text/event-stream' }", '')
  out.push('/** Every operation of the platform API, by route id. */')
  out.push(`export interface Operations {\n${ops.join('\n')}\n}`, '')
  out.push('export type OperationId = keyof Operations', '')
  out.push('export interface ResourceKindInfo {')
  out.push('  kind: string')
  out.push('  plural: string')
  out.push('  title: string')
  out.push('  description: string')
  out.push("  addressing: 'namespaced' | 'named'")
  out.push("  updateMethod: 'PUT' | 'PATCH'")
  out.push('  adminOnly: boolean')
  out.push('  secrets: string[]')
  out.push('  versioned: boolean')
  out.push('}', '')
  out.push('/** The resource kinds (defineKind), in the platform order. */')
  out.push(`export const RESOURCE_KINDS: readonly ResourceKindInfo[] = ${JSON.stringify(kinds, null, 2)}`)
  return `${out.join('\n')}\n`
}
