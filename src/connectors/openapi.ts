import { dereference } from '@apidevtools/json-schema-ref-parser'
import type { Static } from '@sinclair/typebox'
import { parse as parseYaml } from 'yaml'
import type { ConnectorOperation } from '../../schemas/connector.ts'
import { AppError, invalid } from '../kernel/errors.ts'

/*
 * OpenAPI 3 → connector operations. `$ref`s are resolved by @apidevtools/json-schema-ref-parser
 * with every external resolver switched off: a document may only point into itself (an external
 * `$ref` would make the platform read files or fetch URLs a user chose). Circular schemas are left
 * as `$ref` by the resolver and replaced here by an open schema, and the copy out of the resolved
 * document is bounded in nodes and depth: shared `$ref` targets are copied once per use, and a
 * document of a few kilobytes could otherwise expand exponentially.
 *
 * Operation name = `operationId` (characters outside [A-Za-z0-9_-] replaced by `_`), or
 * `method_path` when absent (`get_/pets/{id}` → `get_pets_id`); duplicates get `_2`, `_3`.
 * Parameters (path, query, header; cookie parameters are skipped) and the JSON or form request
 * body's properties become one JSON Schema object; a body that is not an object with properties
 * becomes one parameter `body` mapped to the whole body.
 */
type Operation = Static<typeof ConnectorOperation>
type Json = Record<string, unknown>

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch'] as const
const MAX_NODES = 200_000
const MAX_DEPTH = 64

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v)
const bad = (detail: string, path = 'openapi') =>
  invalid(detail, [{ path, message: detail }], 'connector.invalid_openapi')

/** YAML or JSON text, or an already parsed object. YAML: no custom tags, aliases bounded. */
export function parseDocument(input: string | Json): Json {
  if (typeof input !== 'string') return input
  let doc: unknown
  try {
    doc = parseYaml(input, { maxAliasCount: 100, customTags: [], schema: 'core', uniqueKeys: true })
  } catch (err) {
    throw bad(
      `the document is not valid YAML or JSON: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`,
    )
  }
  if (!isObject(doc)) throw bad('the document must be an object')
  return doc
}

/** A copy of a resolved (possibly DAG-shaped) value, bounded in size and depth; left-over (circular) `$ref`s become open schemas. */
function boundedCopy(value: unknown, budget: { nodes: number }, depth = 0): unknown {
  if (--budget.nodes < 0)
    throw bad(`the document expands to more than ${String(MAX_NODES)} nodes once its $refs are resolved`)
  if (depth > MAX_DEPTH) return {}
  if (Array.isArray(value)) return value.map((v) => boundedCopy(v, budget, depth + 1))
  if (!isObject(value)) return value
  if (typeof value['$ref'] === 'string') return { description: `recursive schema (${value['$ref']})` }
  const out: Json = {}
  for (const [k, v] of Object.entries(value)) out[k] = boundedCopy(v, budget, depth + 1)
  return out
}

const sanitize = (raw: string): string =>
  raw
    .replace(/[^A-Za-z0-9_-]+/g, '_')
    .replace(/_+/g, '_')
    .replace(/^_|_$/g, '')
    .slice(0, 64) || 'operation'

function uniqueName(base: string, taken: Set<string>): string {
  let name = base
  for (let i = 2; taken.has(name); i++) name = `${base.slice(0, 60)}_${String(i)}`
  taken.add(name)
  return name
}

/** The request body's schema and encoding, JSON preferred. */
function bodyOf(op: Json): { schema: Json; encoding: 'json' | 'form'; required: boolean } | null {
  const rb = op['requestBody']
  if (!isObject(rb) || !isObject(rb['content'])) return null
  const content = rb['content']
  const json = Object.keys(content).find((t) => /^application\/(.+\+)?json\b/i.test(t))
  const form = Object.keys(content).find((t) => /^application\/x-www-form-urlencoded\b/i.test(t))
  const type = json ?? form
  if (type === undefined) return null
  const media = content[type]
  const schema = isObject(media) && isObject(media['schema']) ? media['schema'] : {}
  return { schema, encoding: json !== undefined ? 'json' : 'form', required: rb['required'] === true }
}

function buildOperation(
  method: string,
  path: string,
  pathItem: Json,
  op: Json,
  name: string,
  budget: { nodes: number },
): Operation {
  const properties: Json = {}
  const required: string[] = []
  const locations: Record<string, 'path' | 'query' | 'header' | 'body'> = {}
  // path-level parameters, overridden by the operation's own of the same name and location
  const params = new Map<string, Json>()
  for (const list of [pathItem['parameters'], op['parameters']]) {
    if (!Array.isArray(list)) continue
    for (const p of list)
      if (isObject(p) && typeof p['name'] === 'string' && typeof p['in'] === 'string')
        params.set(`${p['in']}:${p['name']}`, p)
  }
  for (const p of params.values()) {
    const where = p['in'] as string
    const pname = p['name'] as string
    if (where !== 'path' && where !== 'query' && where !== 'header') continue // cookie parameters are not supported
    const schema = (isObject(p['schema']) ? boundedCopy(p['schema'], budget) : {}) as Json
    if (typeof p['description'] === 'string' && schema['description'] === undefined)
      schema['description'] = p['description']
    properties[pname] = schema
    locations[pname] = where
    if (where === 'path' || p['required'] === true) required.push(pname)
  }
  let bodyMapping: Record<string, string> | null = null
  let encoding: 'json' | 'form' = 'json'
  const body = bodyOf(op)
  if (body !== null) {
    encoding = body.encoding
    const schema = boundedCopy(body.schema, budget) as Json
    const props = isObject(schema['properties']) ? schema['properties'] : null
    if (props !== null && (schema['type'] === undefined || schema['type'] === 'object')) {
      const bodyRequired = Array.isArray(schema['required'])
        ? schema['required'].filter((x): x is string => typeof x === 'string')
        : []
      const mapping: Record<string, string> = {}
      let renamed = false
      for (const [field, fieldSchema] of Object.entries(props)) {
        let pname = field
        if (pname in properties || !/^[A-Za-z0-9_.-]{1,200}$/.test(pname)) {
          pname = uniqueName(`body_${sanitize(field)}`, new Set(Object.keys(properties)))
          renamed = true
        }
        properties[pname] = fieldSchema
        mapping[field] = pname
        if (bodyRequired.includes(field)) required.push(pname)
      }
      // a plain object body needs no mapping; a renamed field does
      if (renamed) bodyMapping = mapping
    } else {
      const pname = 'body' in properties ? 'request_body' : 'body'
      properties[pname] = schema
      bodyMapping = { $: pname }
      if (body.required) required.push(pname)
    }
  }
  const summary =
    typeof op['summary'] === 'string' ? op['summary'] : typeof op['description'] === 'string' ? op['description'] : ''
  return {
    name,
    description: summary.slice(0, 4000),
    method: method.toUpperCase() as Operation['method'],
    path,
    parameters: { type: 'object', properties, ...(required.length > 0 ? { required: [...new Set(required)] } : {}) },
    locations: Object.fromEntries(Object.entries(locations).filter(([, w]) => w !== 'body')),
    body_mapping: bodyMapping,
    body_encoding: encoding,
  }
}

/** The first `servers` URL with its variables' defaults filled in; null when absent or relative. */
function serverUrl(doc: Json): string | null {
  const servers = doc['servers']
  if (!Array.isArray(servers) || !isObject(servers[0]) || typeof servers[0]['url'] !== 'string') return null
  const s = servers[0]
  const vars = isObject(s['variables']) ? s['variables'] : {}
  const url = (s['url'] as string).replace(/\{([^}]+)\}/g, (_m, v: string) => {
    const d = vars[v]
    return isObject(d) && typeof d['default'] === 'string' ? d['default'] : ''
  })
  return /^https?:\/\//i.test(url) ? url.replace(/\/$/, '') : null
}

/** The first `$ref` that points outside the document (a file or URL), if any. */
function externalRef(value: unknown, depth = 0): string | null {
  if (depth > 200 || typeof value !== 'object' || value === null) return null
  for (const [k, v] of Object.entries(value)) {
    if (k === '$ref' && typeof v === 'string' && !v.startsWith('#')) return v
    const found = externalRef(v, depth + 1)
    if (found !== null) return found
  }
  return null
}

export interface ImportedApi {
  title: string
  baseUrl: string | null
  operations: Operation[]
}

export async function importOpenApi(input: string | Json, maxOperations: number): Promise<ImportedApi> {
  const doc = parseDocument(input)
  const version = doc['openapi']
  if (typeof version !== 'string' || !version.startsWith('3.'))
    throw bad('only OpenAPI 3.x documents can be imported (the `openapi` field)')
  if (!isObject(doc['paths'])) throw bad('the document has no paths')
  const external = externalRef(doc)
  if (external !== null)
    throw bad(`external $refs are not followed (${external.slice(0, 200)}): bundle the document into one file first`)
  let resolved: Json
  try {
    resolved = (await dereference(structuredClone(doc), {
      resolve: { external: false, file: false, http: false },
      dereference: { circular: 'ignore' },
      timeoutMs: 5000,
    })) as Json
  } catch (err) {
    if (err instanceof AppError) throw err
    throw bad(`$ref resolution failed: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`)
  }
  const budget = { nodes: MAX_NODES }
  const taken = new Set<string>()
  const operations: Operation[] = []
  for (const [path, item] of Object.entries(resolved['paths'] as Json)) {
    if (!isObject(item) || !path.startsWith('/')) continue
    for (const method of METHODS) {
      const op = item[method]
      if (!isObject(op)) continue
      if (operations.length >= maxOperations)
        throw bad(`the document has more than ${String(maxOperations)} operations (CONNECTOR_MAX_OPERATIONS)`)
      const base =
        typeof op['operationId'] === 'string' && op['operationId'] !== ''
          ? sanitize(op['operationId'])
          : sanitize(`${method}_${path}`)
      operations.push(buildOperation(method, path, item, op, uniqueName(base, taken), budget))
    }
  }
  const info = isObject(doc['info']) ? doc['info'] : {}
  return { title: typeof info['title'] === 'string' ? info['title'] : '', baseUrl: serverUrl(doc), operations }
}
