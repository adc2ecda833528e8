/*
 * Postgres `text` and `jsonb` reject two things a JS string may hold: U+0000 (NUL) and a lone UTF-16
 * surrogate (U+D800..U+DFFF without its partner). One such character anywhere in a value makes the
 * whole INSERT fail, so everything that reaches the database is checked here first: the gateway
 * rejects it (400), a function result with it fails the execution, LLM output has it replaced.
 * Invalid UTF-8 on the wire is not a problem: it decodes to U+FFFD, which Postgres stores.
 */
export type UnstorableReason = 'a NUL character' | 'a lone surrogate'

export interface UnstorableAt {
  /** Where: `prefix.key[0].key`; a bad object key is named by its (sanitised) self. */
  path: string
  reason: UnstorableReason
}

// Without the `u` flag a character class matches single UTF-16 code units, paired or not.
const SUSPECT = /[\0\ud800-\udfff]/
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/
const UNSTORABLE_ALL = /\0|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g

/** Why Postgres cannot store this string, or null when it can. */
export function unstorableReason(s: string): UnstorableReason | null {
  if (!SUSPECT.test(s)) return null
  if (s.includes('\0')) return 'a NUL character'
  return LONE_SURROGATE.test(s) ? 'a lone surrogate' : null
}

/** The string with every NUL and lone surrogate replaced by U+FFFD (the Unicode replacement character). */
export function toStorableText(s: string): string {
  return SUSPECT.test(s) ? s.replace(UNSTORABLE_ALL, '\ufffd') : s
}

const IDENT = /^[A-Za-z_$][\w$]*$/
const step = (path: string, key: string): string =>
  IDENT.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(toStorableText(key))}]`

/** Marks an object key found unstorable while walking (in the walk's stack, in document order). */
class BadKey {
  readonly reason: UnstorableReason
  constructor(reason: UnstorableReason) {
    this.reason = reason
  }
}

/**
 * The strings and object keys in a JSON-like value that Postgres cannot store, in document order,
 * at most `max`. Iterative (no recursion), so a deeply nested value cannot overflow the stack.
 */
export function listUnstorable(value: unknown, root = '$', max = 20): UnstorableAt[] {
  const found: UnstorableAt[] = []
  const stack: [unknown, string][] = [[value, root]]
  while (stack.length > 0 && found.length < max) {
    const [v, path] = stack.pop() as [unknown, string]
    if (typeof v === 'string') {
      const reason = unstorableReason(v)
      if (reason !== null) found.push({ path, reason })
    } else if (v instanceof BadKey) {
      found.push({ path, reason: v.reason })
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], `${path}[${String(i)}]`])
    } else if (typeof v === 'object' && v !== null) {
      const keys = Object.keys(v)
      for (let i = keys.length - 1; i >= 0; i--) {
        const k = keys[i] as string
        const reason = unstorableReason(k)
        // a bad key is reported as such; its value is not looked at (its path would be unreadable)
        if (reason !== null) stack.push([new BadKey(reason), step(path, k)])
        else stack.push([(v as Record<string, unknown>)[k], step(path, k)])
      }
    }
  }
  return found
}

/** The first string or object key in a JSON-like value that Postgres cannot store, or null. */
export function findUnstorable(value: unknown, root = '$'): UnstorableAt | null {
  return listUnstorable(value, root, 1)[0] ?? null
}

/** A copy of a JSON-like value whose strings and keys are all storable (NUL and lone surrogates → U+FFFD). */
export function toStorable(value: unknown): unknown {
  if (typeof value === 'string') return toStorableText(value)
  if (findUnstorable(value) === null) return value
  // only reached for a value that needs it: rebuild through JSON with a replacer
  return JSON.parse(
    JSON.stringify(value, (_k, v: unknown) => {
      if (typeof v === 'string') return toStorableText(v)
      if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
        const out: Record<string, unknown> = {}
        for (const [k, x] of Object.entries(v)) out[toStorableText(k)] = x
        return out
      }
      return v
    }),
  ) as unknown
}
