import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'

/*
 * Finds every error code written in the platform's source: the dotted string literals handed to an
 * error constructor or helper (`new AppError(…, 'x.y', …)`, `notFound(…, 'x.y')`, `new LlmError('x.y', …)`,
 * `fail('x.y', …)`), written as `code: 'x.y'` or as a default `code = 'x.y'`, and the members of
 * `…ErrorCode` union types. Used by tests/kernel/error-codes.test.ts so that a new code cannot be
 * added without registering it in src/kernel/error-codes.ts.
 */
const ROOTS = ['src', 'gateway', 'actors', 'sandbox']
const CALLEE =
  /(?:\bnew\s+\w*Error|\bnotFound|\bconflict|\binvalid|\bbadRequest|\bunauthorized|\bforbidden|\bunavailable|\binvalidRefresh|\bfail|\bsendError|\bpolicyError)\s*\(/g
const DOTTED = /'([a-z][a-z0-9_]*(?:\.[a-z0-9_]+)+)'/g

export interface FoundCode {
  code: string
  where: string
}

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name)
    if (name === 'node_modules') return []
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : []
  })
}

/** The text of a call's arguments, from the open parenthesis to its balanced close (strings skipped naively). */
function argumentsAt(src: string, open: number): string {
  let depth = 0
  for (let i = open; i < src.length; i++) {
    const c = src[i]
    if (c === '(' || c === '[' || c === '{') depth++
    else if (c === ')' || c === ']' || c === '}') {
      depth--
      if (depth === 0) return src.slice(open + 1, i)
    }
  }
  return src.slice(open + 1)
}

export function scanErrorCodes(root: string): FoundCode[] {
  const found: FoundCode[] = []
  for (const file of ROOTS.flatMap((r) => files(join(root, r)))) {
    const src = readFileSync(file, 'utf8')
    const rel = relative(root, file)
    const add = (text: string, offset: number) => {
      for (const m of text.matchAll(DOTTED))
        found.push({ code: m[1] as string, where: `${rel}:${String(src.slice(0, offset).split('\n').length)}` })
    }
    for (const m of src.matchAll(CALLEE)) {
      const open = (m.index ?? 0) + m[0].length - 1
      add(argumentsAt(src, open), open)
    }
    for (const m of src.matchAll(/\bcode\s*[:=]\s*('[a-z][a-z0-9_.]*')/g)) add(m[1] as string, m.index ?? 0)
    for (const m of src.matchAll(/type\s+\w*ErrorCode\s*=([^;]*?)(?:\n\n|\nexport|\ninterface|\nconst)/gs))
      add(m[1] as string, m.index ?? 0)
  }
  return found
}
