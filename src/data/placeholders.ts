import type { FieldIssue } from '../kernel/errors.ts'

/*
 * `:name` placeholders of saved SQL, found by a small lexer rather than a regex: a placeholder is
 * `:` followed by a letter or `_` (then letters, digits, `_`) in plain SQL text only. Not inside
 * '…' strings (with '' escapes; E'…' strings with backslash escapes), "…" and `…` identifiers,
 * $tag$…$tag$ bodies, -- line and /* block *\/ comments (nested, as Postgres allows), and never
 * the second colon of a `::cast` (nor `:=`, array slices `[1:2]` have a digit after the colon).
 * The SQL text itself is never changed except that each placeholder is replaced by the driver's
 * own bound-parameter marker: the values travel separately.
 */
export type Piece = { text: string } | { param: string }

export class PlaceholderError extends Error {}

const isIdentStart = (c: string) => /[A-Za-z_]/.test(c)
const isIdent = (c: string) => /[A-Za-z0-9_]/.test(c)

/** Splits SQL into text and placeholders; throws PlaceholderError on an unterminated literal or comment. */
export function splitPlaceholders(sql: string): Piece[] {
  const out: Piece[] = []
  let text = ''
  let i = 0
  const n = sql.length
  const until = (end: string, from: number, what: string, backslash = false): number => {
    for (let j = from; j < n; j++) {
      if (backslash && sql[j] === '\\') {
        j++
        continue
      }
      if (sql.startsWith(end, j)) {
        // a doubled quote is an escaped quote, not the end
        if (end.length === 1 && (end === "'" || end === '"' || end === '`') && sql[j + 1] === end) {
          j++
          continue
        }
        return j + end.length
      }
    }
    throw new PlaceholderError(`unterminated ${what}`)
  }
  while (i < n) {
    const c = sql[i] as string
    const next = sql[i + 1]
    let end = -1
    if (c === "'")
      end = until(
        "'",
        i + 1,
        'string literal',
        (i > 0 && /[eE]/.test(sql[i - 1] ?? '') && !isIdent(sql[i - 2] ?? '')) || false,
      )
    else if (c === '"') end = until('"', i + 1, 'quoted identifier')
    else if (c === '`') end = until('`', i + 1, 'quoted identifier')
    else if (c === '-' && next === '-') {
      const nl = sql.indexOf('\n', i)
      end = nl === -1 ? n : nl + 1
    } else if (c === '/' && next === '*') {
      let depth = 1
      let j = i + 2
      for (; j < n && depth > 0; j++) {
        if (sql[j] === '/' && sql[j + 1] === '*') {
          depth++
          j++
        } else if (sql[j] === '*' && sql[j + 1] === '/') {
          depth--
          j++
        }
      }
      if (depth > 0) throw new PlaceholderError('unterminated block comment')
      end = j
    } else if (c === '$' && !isIdent(sql[i - 1] ?? '')) {
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i))
      if (tag !== null) end = until(tag[0], i + tag[0].length, 'dollar-quoted string')
    } else if (c === ':') {
      if (next === ':') {
        // a cast: both colons are text, and what follows is a type name, never a placeholder
        text += '::'
        i += 2
        continue
      }
      if (next !== undefined && isIdentStart(next) && sql[i - 1] !== ':') {
        let j = i + 1
        while (j < n && isIdent(sql[j] as string)) j++
        if (text !== '') out.push({ text })
        text = ''
        out.push({ param: sql.slice(i + 1, j) })
        i = j
        continue
      }
    }
    if (end !== -1) {
      text += sql.slice(i, end)
      i = end
      continue
    }
    text += c
    i++
  }
  if (text !== '') out.push({ text })
  return out
}

/** The placeholder names in order of first use. */
export const placeholderNames = (pieces: readonly Piece[]): string[] => [
  ...new Set(pieces.flatMap((p) => ('param' in p ? [p.param] : []))),
]

/** For the kind's validation: a query whose SQL cannot be split is refused when saved. */
export function placeholderIssues(sql: string): FieldIssue[] {
  try {
    splitPlaceholders(sql)
    return []
  } catch (err) {
    if (err instanceof PlaceholderError) return [{ path: 'sql', message: err.message }]
    throw err
  }
}
