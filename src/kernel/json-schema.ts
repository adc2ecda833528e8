import { Ajv, type ValidateFunction } from 'ajv'
import addFormatsImport from 'ajv-formats'
import type { FieldIssue } from './errors.ts'

/*
 * User-supplied JSON Schemas (a function's input_schema / output_schema, an agent's output schema,
 * a store's or a collection's schema, ...): the one validator every feature uses, so it lives in
 * the kernel. One Ajv instance; compiled validators are cached by the schema's text (bounded), so
 * a warm execute path compiles nothing.
 * An empty schema `{}` accepts anything.
 */
const addFormats = addFormatsImport as unknown as (ajv: Ajv) => Ajv
const ajv = addFormats(new Ajv({ allErrors: true, strict: false, validateSchema: true }))
const cache = new Map<string, ValidateFunction>()
const MAX_CACHED = 1000

function compiled(schema: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(schema)
  let v = cache.get(key)
  if (v === undefined) {
    v = ajv.compile(schema)
    if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value as string)
    cache.set(key, v)
  }
  return v
}

/** Issues with a schema itself (for saving a function); empty when it compiles. */
export function schemaIssues(path: string, schema: Record<string, unknown>): FieldIssue[] {
  try {
    compiled(schema)
    return []
  } catch (err) {
    return [{ path, message: `not a valid JSON Schema: ${err instanceof Error ? err.message : String(err)}` }]
  }
}

/** Validates a value; returns issues with JSON-pointer paths under `base` (empty = valid). */
export function validateAgainst(schema: Record<string, unknown>, value: unknown, base: string): FieldIssue[] {
  if (Object.keys(schema).length === 0) return []
  const v = compiled(schema)
  if (v(value)) return []
  return (v.errors ?? []).map((e) => ({ path: `${base}${e.instancePath}`, message: e.message ?? 'invalid' }))
}
