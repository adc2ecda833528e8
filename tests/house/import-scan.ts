/*
 * Reading the relative imports out of source text, without a parser: comments are blanked first
 * (strings, template literals and regular expression literals kept, so a `//` inside one is not
 * taken for a comment), then the import forms are matched on the rest. Newlines are kept, so an
 * offset still gives the right line.
 */

export interface ImportSite {
  /** 1-based line of the statement's first keyword. */
  readonly line: number
  readonly specifier: string
  /** The statement as written, on one line (for the failure messages). */
  readonly text: string
}

/** A `/` after one of these (ignoring spaces) starts a regular expression, not a division. */
const REGEX_BEFORE = new Set([
  '',
  '(',
  ',',
  '=',
  ':',
  '[',
  '!',
  '&',
  '|',
  '?',
  '{',
  '}',
  ';',
  '+',
  '-',
  '*',
  '%',
  '<',
  '>',
  '~',
  '^',
])
const REGEX_AFTER_WORDS = /(?:^|[^\w$.])(?:return|typeof|case|do|else|in|of|new|delete|void|throw|yield|await)$/

/** The source with every comment replaced by spaces (newlines kept). */
export function stripComments(src: string): string {
  const out: string[] = []
  let i = 0
  const n = src.length
  // the template literals we are inside of, each with the `${` depth opened in it
  const templates: number[] = []
  let lastSignificant = ''
  let recent = ''
  const push = (s: string): void => {
    out.push(s)
    for (const ch of s) {
      if (!/\s/.test(ch)) lastSignificant = ch
    }
    recent = (recent + s).slice(-16)
  }
  const blank = (s: string): string => s.replace(/[^\n]/g, ' ')
  const readQuoted = (q: string): void => {
    let j = i + 1
    while (j < n && src[j] !== q && src[j] !== '\n') j += src[j] === '\\' ? 2 : 1
    push(src.slice(i, j + 1))
    i = j + 1
  }
  // reads template text from i (just after a backtick or a closing `}`) to the closing backtick
  // or the next `${`
  const readTemplateText = (): void => {
    let j = i
    while (j < n) {
      if (src[j] === '\\') j += 2
      else if (src[j] === '`') {
        push(src.slice(i, j + 1))
        i = j + 1
        templates.pop()
        return
      } else if (src[j] === '$' && src[j + 1] === '{') {
        push(src.slice(i, j + 2))
        i = j + 2
        templates[templates.length - 1] = 1
        return
      } else j++
    }
    push(src.slice(i))
    i = n
  }
  while (i < n) {
    const c = src[i]!
    const d = src[i + 1]
    if (c === '/' && d === '/') {
      let j = src.indexOf('\n', i)
      if (j < 0) j = n
      out.push(blank(src.slice(i, j)))
      i = j
    } else if (c === '/' && d === '*') {
      let j = src.indexOf('*/', i + 2)
      j = j < 0 ? n : j + 2
      out.push(blank(src.slice(i, j)))
      i = j
    } else if (c === '"' || c === "'") {
      readQuoted(c)
    } else if (c === '`') {
      push('`')
      i++
      templates.push(0)
      readTemplateText()
    } else if (templates.length > 0 && (c === '{' || c === '}')) {
      const depth = templates[templates.length - 1]!
      if (c === '{') templates[templates.length - 1] = depth + 1
      else if (depth === 1) {
        // the `}` closing `${`: back to the template's text
        push('}')
        i++
        templates[templates.length - 1] = 0
        readTemplateText()
        continue
      } else templates[templates.length - 1] = depth - 1
      push(c)
      i++
    } else if (c === '/' && (REGEX_BEFORE.has(lastSignificant) || REGEX_AFTER_WORDS.test(recent.trimEnd()))) {
      // a regular expression literal: to its closing `/` outside a character class
      let j = i + 1
      let inClass = false
      while (j < n && src[j] !== '\n') {
        if (src[j] === '\\') j += 2
        else if (src[j] === '/' && !inClass) break
        else {
          if (src[j] === '[') inClass = true
          else if (src[j] === ']') inClass = false
          j++
        }
      }
      push(src.slice(i, j + 1))
      i = j + 1
    } else {
      push(c)
      i++
    }
  }
  return out.join('')
}

const Q = `(['"])([^'"\\n]+)\\`
// `import x from`, `import { a, b } from` (across lines), `import * as x from`, `import x, { a } from`,
// each with an optional `type`; `export { a } from`, `export * from`, `export * as x from`;
// side-effect `import '...'`; dynamic `import('...')`
const FORMS: readonly RegExp[] = [
  new RegExp(
    `\\bimport\\s+(?:type\\s+)?(?:[\\w$]+\\s*,\\s*)?(?:\\{[^}]*\\}|\\*\\s*as\\s+[\\w$]+|[\\w$]+)\\s*from\\s*${Q}1`,
    'g',
  ),
  new RegExp(`\\bexport\\s+(?:type\\s+)?(?:\\{[^}]*\\}|\\*(?:\\s*as\\s+[\\w$]+)?)\\s*from\\s*${Q}1`, 'g'),
  new RegExp(`\\bimport\\s*${Q}1`, 'g'),
  new RegExp(`\\bimport\\s*\\(\\s*${Q}1\\s*[,)]`, 'g'),
]

/** Every import of the (comment-free) source whose specifier is relative (`./`, `../`). */
export function relativeImports(code: string): ImportSite[] {
  const sites: ImportSite[] = []
  for (const form of FORMS) {
    for (const m of code.matchAll(form)) {
      // every form ends with the specifier's quote, its text and the closing quote (capture 2)
      const specifier = m[2]!
      if (!specifier.startsWith('./') && !specifier.startsWith('../')) continue
      const before = code.slice(0, m.index)
      // a keyword preceded by `.` is a property (`x.import(...)`), not an import
      if (before.endsWith('.')) continue
      sites.push({
        line: before.split('\n').length,
        specifier,
        text: m[0].replace(/\s+/g, ' '),
      })
    }
  }
  return sites.sort((a, b) => a.line - b.line)
}
