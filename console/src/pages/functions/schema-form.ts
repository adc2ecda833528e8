/*
 * What the Run form asks for, read from a function's input_schema: one field per property of an
 * object schema (text, number, checkbox, choice, or JSON for anything nested), or one JSON field
 * when the schema says nothing usable. The values go back as the execute body's `input`.
 */
export type FieldKind = 'string' | 'number' | 'integer' | 'boolean' | 'enum' | 'json'

export interface FormField {
  name: string
  kind: FieldKind
  required: boolean
  label: string
  description?: string
  options?: string[]
  initial: string | boolean
}

type Schema = Record<string, unknown>

export function fieldsOf(schema: unknown): FormField[] | null {
  if (typeof schema !== 'object' || schema === null) return null
  const s = schema as Schema
  const props = s['properties']
  if (typeof props !== 'object' || props === null || Object.keys(props).length === 0) return null
  const required = new Set(Array.isArray(s['required']) ? (s['required'] as string[]) : [])
  return Object.entries(props as Record<string, Schema>).map(([name, p]) => {
    const enumValues = Array.isArray(p['enum']) ? (p['enum'] as unknown[]).map(String) : undefined
    const type = Array.isArray(p['type']) ? (p['type'] as string[]).find((t) => t !== 'null') : p['type']
    const kind: FieldKind =
      enumValues !== undefined ? 'enum' : type === 'string' || type === 'number' || type === 'integer' || type === 'boolean' ? type : 'json'
    const def = p['default']
    const initial =
      kind === 'boolean' ? def === true : def === undefined ? (kind === 'enum' && required.has(name) ? (enumValues?.[0] ?? '') : '') : kind === 'json' ? JSON.stringify(def, null, 2) : String(def)
    return {
      name,
      kind,
      required: required.has(name),
      label: typeof p['title'] === 'string' ? p['title'] : name,
      ...(typeof p['description'] === 'string' ? { description: p['description'] } : {}),
      ...(enumValues !== undefined ? { options: enumValues } : {}),
      initial,
    }
  })
}

/** The form's values as the function's input; an error per field that cannot be read. */
export function inputOf(fields: FormField[], values: Record<string, string | boolean>): { input: Record<string, unknown>; errors: Record<string, string> } {
  const input: Record<string, unknown> = {}
  const errors: Record<string, string> = {}
  for (const f of fields) {
    const v = values[f.name] ?? f.initial
    if (f.kind === 'boolean') {
      input[f.name] = v === true
      continue
    }
    const text = String(v)
    if (text === '') {
      if (f.required) errors[f.name] = 'required'
      continue
    }
    if (f.kind === 'number' || f.kind === 'integer') {
      const n = Number(text)
      if (!Number.isFinite(n) || (f.kind === 'integer' && !Number.isInteger(n))) errors[f.name] = `not ${f.kind === 'integer' ? 'an integer' : 'a number'}`
      else input[f.name] = n
    } else if (f.kind === 'json') {
      try {
        input[f.name] = JSON.parse(text) as unknown
      } catch {
        errors[f.name] = 'not valid JSON'
      }
    } else input[f.name] = text
  }
  return { input, errors }
}
