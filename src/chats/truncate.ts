/*
 * Tool results entering the LLM context are bounded (TOOL_RESULT_CONTEXT_MAX_SIZE characters,
 * SPEC §7): JSON lists are trimmed to whole elements, long strings clipped, and the result says so
 * with the marker {_truncated: true, returned: <integer>, total: <integer>}.
 */
export function truncateForContext(value: unknown, max: number): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value ?? null)
  if (text.length <= max) return text
  if (Array.isArray(value)) {
    // the largest whole-element prefix that fits together with the marker
    let lo = 0
    let hi = value.length
    const render = (k: number) => JSON.stringify([...value.slice(0, k), { _truncated: true, returned: k, total: value.length }])
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2)
      if (render(mid).length <= max) lo = mid
      else hi = mid - 1
    }
    return render(lo)
  }
  // strings and other values: clip the text (of the JSON for objects) and say how much was kept
  const marker = (kept: number) => JSON.stringify({ _truncated: true, returned: kept, total: text.length, content: text.slice(0, kept) })
  let kept = Math.max(0, max - 80)
  while (kept > 0 && marker(kept).length > max) kept -= Math.max(1, marker(kept).length - max)
  return marker(kept)
}
