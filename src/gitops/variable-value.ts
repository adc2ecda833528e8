import type { VariableDeclaration } from './package-schema.ts'

/** A variable's value as it goes into the package text, or why it cannot. */
export type VariableValue = { ok: true; text: string } | { ok: false; message: string }

const MAX_VALUE_LENGTH = 10_000

/**
 * Checks one value against its declaration and gives the text that replaces the placeholder. The
 * value is put into the YAML text as it is (substitution happens before parsing), so a value that
 * spans lines is refused: it could add keys or resources the package does not have.
 * `resourceExists` (when given) answers whether a `resource_ref` names something that exists.
 */
export function variableValue(
  declaration: VariableDeclaration,
  value: unknown,
  resourceExists?: (resource: string, ref: string) => boolean,
): VariableValue {
  const fail = (message: string): VariableValue => ({ ok: false, message })
  if (declaration.type === 'boolean') {
    if (value === true || value === 'true') return { ok: true, text: 'true' }
    if (value === false || value === 'false') return { ok: true, text: 'false' }
    return fail('expected true or false')
  }
  const text = typeof value === 'number' && Number.isFinite(value) ? String(value) : value
  if (typeof text !== 'string') return fail('expected a string')
  if (/[\r\n]/.test(text)) return fail('a value may not span lines (it is put into the package text as it is)')
  if (text.length > MAX_VALUE_LENGTH) return fail(`longer than ${String(MAX_VALUE_LENGTH)} characters`)
  switch (declaration.type) {
    case 'text': {
      if (declaration.pattern === undefined || new RegExp(declaration.pattern, 'u').test(text))
        return { ok: true, text }
      return fail(`does not match the pattern ${declaration.pattern}`)
    }
    case 'enum': {
      const choices = declaration.choices ?? []
      return choices.includes(text) ? { ok: true, text } : fail(`expected one of: ${choices.join(', ')}`)
    }
    case 'resource_ref': {
      if (text === '') return fail(`expected the name of one of the ${declaration.resource ?? 'resources'}`)
      if (
        resourceExists !== undefined &&
        declaration.resource !== undefined &&
        !resourceExists(declaration.resource, text)
      )
        return fail(`no ${declaration.resource} named ${text}`)
      return { ok: true, text }
    }
    case 'secret':
      return text === '' ? fail('a secret may not be empty') : { ok: true, text }
  }
}
