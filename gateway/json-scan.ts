/*
 * One pass over a JSON request body's bytes, before JSON.parse, on the hot path of every request
 * with a body. It answers two questions cheaply:
 * - depth: `[` and `{` nesting outside strings. A body nested thousands deep parses fine but
 *   overflows the stack of whatever walks it recursively later (validation, the services).
 * - text Postgres cannot store: in valid JSON a NUL or a lone surrogate can only arrive as a
 *   `\u` escape (a raw control character is invalid JSON; raw invalid UTF-8 decodes to U+FFFD),
 *   so only escapes are looked at. The exact place is found afterwards on the parsed value
 *   (src/kernel/storable-text.ts), only for the rare body that has one.
 * Malformed JSON is left to JSON.parse: the scan never rejects what it does not understand.
 */
export const MAX_JSON_DEPTH = 64

export type JsonScan = 'ok' | 'too_deep' | 'unstorable'

const QUOTE = 0x22
const BACKSLASH = 0x5c
const U = 0x75

/** The value of 4 hex digits at `i`, or -1. */
function hex4(b: Uint8Array, i: number): number {
  if (i + 4 > b.length) return -1
  let v = 0
  for (let k = i; k < i + 4; k++) {
    const c = b[k] as number
    const d =
      c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : c >= 0x41 && c <= 0x46 ? c - 0x37 : -1
    if (d < 0) return -1
    v = v * 16 + d
  }
  return v
}

export function scanJson(b: Uint8Array, maxDepth = MAX_JSON_DEPTH): JsonScan {
  let depth = 0
  let unstorable = false
  const n = b.length
  for (let i = 0; i < n; i++) {
    const c = b[i] as number
    if (c === QUOTE) {
      // inside a string until the closing quote; only escapes matter
      for (i++; i < n; i++) {
        const s = b[i] as number
        if (s === QUOTE) break
        if (s !== BACKSLASH) continue
        if (b[i + 1] !== U) {
          i++
          continue
        }
        const code = hex4(b, i + 2)
        if (code < 0) {
          // malformed escape: JSON.parse will refuse it
          i++
          continue
        }
        i += 5
        if (code === 0) unstorable = true
        else if (code >= 0xd800 && code <= 0xdbff) {
          // a high surrogate must be followed by a low one: `\uD83D\uDE00`
          const low = b[i + 1] === BACKSLASH && b[i + 2] === U ? hex4(b, i + 3) : -1
          if (low >= 0xdc00 && low <= 0xdfff) i += 6
          else unstorable = true
        } else if (code >= 0xdc00 && code <= 0xdfff) unstorable = true
      }
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > maxDepth) return 'too_deep'
    } else if (c === 0x7d || c === 0x5d) depth--
  }
  return unstorable ? 'unstorable' : 'ok'
}
