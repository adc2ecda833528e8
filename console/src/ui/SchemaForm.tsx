import { useState } from 'react'
import type { JsonSchema } from '../api/openapi.ts'
import type { ApiError } from '../api/client.ts'
import { Field } from './Field.tsx'

/*
 * A form built from a JSON schema (a create or update body of the API): one control per top-level
 * property — text, long text, number, checkbox, a select for enumerations — and JSON text for
 * objects and arrays. The API's field errors (ApiError.fields) mark the offending controls.
 */
export type FormValue = Record<string, unknown>

/** The non-null alternative of `T | null` and its nullability. */
function unwrap(schema: JsonSchema): { schema: JsonSchema; nullable: boolean } {
  const alts = schema.anyOf ?? schema.oneOf
  if (alts !== undefined) {
    const rest = alts.filter((a) => a.type !== 'null')
    if (rest.length === 1)
      return {
        schema: { ...(rest[0] as JsonSchema), description: schema.description ?? rest[0]?.description },
        nullable: rest.length < alts.length,
      }
  }
  return { schema, nullable: false }
}

/** Literal alternatives (`'a' | 'b'`) as options, or undefined. */
function choicesOf(schema: JsonSchema): unknown[] | undefined {
  if (schema.enum !== undefined) return schema.enum
  const alts = schema.anyOf ?? schema.oneOf
  if (alts !== undefined && alts.length > 0 && alts.every((a) => 'const' in a)) return alts.map((a) => a.const)
  return undefined
}

export type ControlKind = 'text' | 'textarea' | 'number' | 'boolean' | 'select' | 'json'

const LONG_TEXT = /content|prompt|code|sql|template|description|body|html|css|source|instructions/

export function controlKind(name: string, schema: JsonSchema): ControlKind {
  const { schema: s } = unwrap(schema)
  if (choicesOf(s) !== undefined) return 'select'
  switch (s.type) {
    case 'string':
      return (s.maxLength ?? 0) > 500 || LONG_TEXT.test(name) ? 'textarea' : 'text'
    case 'integer':
    case 'number':
      return 'number'
    case 'boolean':
      return 'boolean'
    default:
      return 'json'
  }
}

const label = (name: string): string => {
  const words = name.replace(/_/g, ' ')
  return words.charAt(0).toUpperCase() + words.slice(1)
}

export function SchemaForm({
  schema,
  value,
  onChange,
  error,
  omit = [],
  readOnly = [],
  idPrefix = 'f',
}: {
  schema: JsonSchema
  value: FormValue
  onChange: (v: FormValue) => void
  error?: ApiError | undefined
  /** Properties not shown (set elsewhere, e.g. by the page). */
  omit?: string[]
  /** Properties shown but not editable (the address of an existing resource). */
  readOnly?: string[]
  idPrefix?: string
}) {
  const required = new Set(schema.required ?? [])
  const entries = Object.entries(schema.properties ?? {}).filter(([k]) => !omit.includes(k))
  return (
    <div className="schema-form">
      {entries.map(([name, prop]) => (
        <SchemaField
          key={`${idPrefix}-${name}`}
          name={name}
          schema={prop}
          required={required.has(name)}
          readOnly={readOnly.includes(name)}
          value={value[name]}
          error={error?.fieldMessage(name)}
          onChange={(v) => {
            const next = { ...value }
            if (v === undefined) delete next[name]
            else next[name] = v
            onChange(next)
          }}
        />
      ))}
    </div>
  )
}

function SchemaField({
  name,
  schema,
  required,
  readOnly,
  value,
  error,
  onChange,
}: {
  name: string
  schema: JsonSchema
  required: boolean
  readOnly: boolean
  value: unknown
  error: string | undefined
  onChange: (v: unknown) => void
}) {
  const { schema: s, nullable } = unwrap(schema)
  const kind = controlKind(name, schema)
  const [jsonText, setJsonText] = useState(() => (value === undefined ? '' : JSON.stringify(value, null, 2)))
  const [jsonError, setJsonError] = useState<string | undefined>(undefined)
  const help = s.description ?? schema.description
  const shownError = error ?? jsonError
  return (
    <Field
      label={label(name)}
      help={typeof help === 'string' ? help : undefined}
      error={shownError}
      required={required}
    >
      {(c) => {
        const common = { ...c, name, readOnly, disabled: readOnly && kind === 'boolean' }
        switch (kind) {
          case 'boolean':
            return (
              <input
                {...common}
                type="checkbox"
                className="checkbox"
                checked={value === true || (value === undefined && s.default === true)}
                onChange={(e) => onChange(e.target.checked)}
              />
            )
          case 'select': {
            const choices = choicesOf(s) ?? []
            return (
              <select
                {...common}
                value={value === undefined || value === null ? '' : String(value)}
                onChange={(e) => {
                  const pick = choices.find((x) => String(x) === e.target.value)
                  onChange(e.target.value === '' ? (nullable ? null : undefined) : pick)
                }}
              >
                <option value="">{s.default === undefined ? '—' : `default (${String(s.default)})`}</option>
                {choices.map((x) => (
                  <option key={String(x)} value={String(x)}>
                    {String(x)}
                  </option>
                ))}
              </select>
            )
          }
          case 'number':
            return (
              <input
                {...common}
                type="number"
                step={s.type === 'integer' ? 1 : 'any'}
                min={s.minimum}
                max={s.maximum}
                placeholder={s.default === undefined ? undefined : String(s.default)}
                value={typeof value === 'number' ? value : ''}
                onChange={(e) =>
                  onChange(e.target.value === '' ? (nullable ? null : undefined) : Number(e.target.value))
                }
              />
            )
          case 'text':
          case 'textarea': {
            const props = {
              ...common,
              placeholder: typeof s.default === 'string' && s.default !== '' ? s.default : undefined,
              value: typeof value === 'string' ? value : '',
              onChange: (e: { target: { value: string } }) =>
                onChange(e.target.value === '' && !required ? (nullable ? null : undefined) : e.target.value),
            }
            return kind === 'text' ? (
              <input
                {...props}
                type={/password|secret|token|api_key/.test(name) ? 'password' : 'text'}
                autoComplete="off"
              />
            ) : (
              <textarea {...props} rows={6} spellCheck={false} />
            )
          }
          default:
            return (
              <textarea
                {...common}
                className="mono"
                rows={5}
                spellCheck={false}
                placeholder={s.type === 'array' ? '[]' : '{}'}
                value={jsonText}
                onChange={(e) => {
                  setJsonText(e.target.value)
                  if (e.target.value.trim() === '') {
                    setJsonError(undefined)
                    onChange(undefined)
                    return
                  }
                  try {
                    onChange(JSON.parse(e.target.value) as unknown)
                    setJsonError(undefined)
                  } catch {
                    setJsonError('Not valid JSON yet')
                  }
                }}
              />
            )
        }
      }}
    </Field>
  )
}
