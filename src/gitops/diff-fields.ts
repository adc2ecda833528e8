import { canonicalJson } from '../resources/canonical-json.ts'
import { formatPath, type PathSegment } from './document-path.ts'

/** One field that differs; a secret's values are the text `(secret)`, never the value. */
export interface FieldChange {
  path: string
  change: 'added' | 'removed' | 'changed'
  before?: unknown
  after?: unknown
}

export const SECRET_SHOWN_AS = '(secret)'

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)

/**
 * The fields that differ between two bodies, leaf by leaf where both sides are objects or lists
 * (`tools[2].name`), whole values elsewhere. A secret field (top level, as kinds declare them) is
 * compared whole and shown masked: a plan is printed and logged.
 */
export function diffFields(
  before: Readonly<Record<string, unknown>>,
  after: Readonly<Record<string, unknown>>,
  secretFields: readonly string[] = [],
): FieldChange[] {
  const out: FieldChange[] = []
  const mask = (path: PathSegment[], v: unknown) =>
    secretFields.includes(String(path[0])) && v !== undefined ? SECRET_SHOWN_AS : v
  const push = (path: PathSegment[], change: FieldChange['change'], b: unknown, a: unknown) => {
    const entry: FieldChange = { path: formatPath(path), change }
    if (change !== 'added') entry.before = mask(path, b)
    if (change !== 'removed') entry.after = mask(path, a)
    out.push(entry)
  }
  // bodies come from a parsed document whose depth is bounded: the recursion is too
  const walk = (b: unknown, a: unknown, path: PathSegment[]): void => {
    const secret = path.length > 0 && secretFields.includes(String(path[0]))
    if (!secret && isObject(b) && isObject(a)) {
      for (const k of [...new Set([...Object.keys(b), ...Object.keys(a)])].sort()) {
        if (!(k in a)) push([...path, k], 'removed', b[k], undefined)
        else if (!(k in b)) push([...path, k], 'added', undefined, a[k])
        else walk(b[k], a[k], [...path, k])
      }
    } else if (!secret && Array.isArray(b) && Array.isArray(a)) {
      for (let i = 0; i < Math.max(a.length, b.length); i++) {
        if (i >= a.length) push([...path, i], 'removed', b[i], undefined)
        else if (i >= b.length) push([...path, i], 'added', undefined, a[i])
        else walk(b[i], a[i], [...path, i])
      }
    } else if (canonicalJson(b) !== canonicalJson(a)) push(path, 'changed', b, a)
  }
  walk(before, after, [])
  return out
}
