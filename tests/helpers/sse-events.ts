/** One event of a chat's SSE stream, as the tests read it. */
export interface SseEvent {
  id: number
  event: string
  data: unknown
}

/**
 * The events of an SSE body (or of its complete part: blocks end with a blank line); comment lines
 * (`: keep-alive`) are skipped, `data` is parsed as JSON.
 */
export function parseSse(text: string): SseEvent[] {
  const out: SseEvent[] = []
  for (const block of text.split('\n\n')) {
    const lines = block.split('\n').filter((l) => l !== '' && !l.startsWith(':'))
    if (lines.length === 0) continue
    const get = (k: string) => lines.find((l) => l.startsWith(`${k}: `))?.slice(k.length + 2)
    out.push({
      id: Number(get('id')),
      event: get('event') ?? 'message',
      data: JSON.parse(get('data') ?? 'null') as unknown,
    })
  }
  return out
}
