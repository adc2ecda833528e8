/*
 * Tool results entering the LLM context are bounded (TOOL_RESULT_CONTEXT_MAX_SIZE characters;
 * the stored result by TOOL_RESULT_MAX_SIZE): JSON lists are trimmed to whole elements, long
 * strings clipped, and the result says so with the marker {_truncated: true, returned, total}.
 *
 * A stored result is JSON text, so text is parsed first: a list given as text is trimmed like a
 * list. What is trimmed to whole elements:
 *  - a top-level array: its first elements, the marker as the last element
 *    (`[e0, e1, …, {"_truncated": true, "returned": k, "total": n}]`);
 *  - an object whose largest member (by its JSON length) is an array, e.g. `{"rows": [...], "count": n}`:
 *    that array trimmed the same way, the other members kept as they are — when they fit;
 * anything else (a long string, an object without such an array or whose other members alone are
 * too long) is clipped as text: `{"_truncated": true, "returned": <characters kept>, "total":
 * <characters>, "content": "<the first characters>"}`.
 */

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** The value a result's text holds, when it is a JSON array or object; undefined otherwise. */
function parsedList(text: string): unknown {
  const c = text.trimStart()[0]
  if (c !== '[' && c !== '{') return undefined
  try {
    return JSON.parse(text) as unknown
  } catch {
    return undefined
  }
}

const marker = (k: number, total: number) => ({ _truncated: true, returned: k, total })

/** The largest whole-element prefix of `list` whose rendering fits in `max`; null when not even none does. */
function trimmedList(list: readonly unknown[], max: number, render: (kept: unknown[]) => string): string | null {
  const at = (k: number) => render([...list.slice(0, k), marker(k, list.length)])
  if (at(0).length > max) return null
  let lo = 0
  let hi = list.length
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2)
    if (at(mid).length <= max) lo = mid
    else hi = mid - 1
  }
  return at(lo)
}

/** The member of an object worth trimming: its largest array, if any. */
function largestArray(obj: Record<string, unknown>): string | null {
  let best: string | null = null
  let bestLen = -1
  for (const [k, v] of Object.entries(obj)) {
    if (!Array.isArray(v)) continue
    const len = JSON.stringify(v).length
    if (len > bestLen) {
      best = k
      bestLen = len
    }
  }
  return best
}

export function truncateForContext(value: unknown, max: number): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value ?? null)
  if (text.length <= max) return text
  const v = typeof value === 'string' ? parsedList(value) : value
  if (Array.isArray(v)) {
    const out = trimmedList(v, max, (kept) => JSON.stringify(kept))
    if (out !== null) return out
  } else if (isRecord(v)) {
    const key = largestArray(v)
    if (key !== null) {
      const out = trimmedList(v[key] as unknown[], max, (kept) => JSON.stringify({ ...v, [key]: kept }))
      if (out !== null) return out
    }
  }
  // strings and other values: clip the text (of the JSON for objects) and say how much was kept
  const clipped = (kept: number) => JSON.stringify({ ...marker(kept, text.length), content: text.slice(0, kept) })
  let kept = Math.max(0, max - 80)
  while (kept > 0 && clipped(kept).length > max) kept -= Math.max(1, clipped(kept).length - max)
  return clipped(kept)
}
