/*
 * Server-Sent Events frames, parsed as they arrive (the `text/event-stream` answer of a Streamable
 * HTTP MCP server): lines `field: value`, an empty line ends an event, `data` lines joined with
 * newlines, comments (`:`) ignored. Bytes are decoded as a stream, so a UTF-8 character split
 * across chunks survives. What is kept between chunks is one unfinished event; the caller bounds
 * the stream as a whole (size and time).
 */
export interface SseEvent {
  event: string
  data: string
  id: string | undefined
}

export function sseParser(): { push(chunk: Buffer): SseEvent[]; end(): SseEvent[] } {
  const decoder = new TextDecoder('utf-8')
  let buffer = ''
  let data: string[] = []
  let event = ''
  let id: string | undefined
  const lines = (final: boolean): SseEvent[] => {
    const out: SseEvent[] = []
    for (;;) {
      const nl = buffer.search(/\r\n|\r|\n/)
      if (nl === -1) break
      // a lone \r at the end of the buffer may be the first half of \r\n
      if (buffer[nl] === '\r' && nl === buffer.length - 1 && !final) break
      const line = buffer.slice(0, nl)
      buffer = buffer.slice(nl + (buffer.startsWith('\r\n', nl) ? 2 : 1))
      if (line === '') {
        if (data.length > 0) out.push({ event: event === '' ? 'message' : event, data: data.join('\n'), id })
        data = []
        event = ''
        continue
      }
      if (line.startsWith(':')) continue
      const colon = line.indexOf(':')
      const field = colon === -1 ? line : line.slice(0, colon)
      let value = colon === -1 ? '' : line.slice(colon + 1)
      if (value.startsWith(' ')) value = value.slice(1)
      if (field === 'data') data.push(value)
      else if (field === 'event') event = value
      else if (field === 'id') id = value
    }
    return out
  }
  return {
    push(chunk) {
      buffer += decoder.decode(chunk, { stream: true })
      return lines(false)
    },
    end() {
      buffer += decoder.decode()
      const out = lines(true)
      // an event the stream ended without its blank line still counts
      if (data.length > 0) out.push({ event: event === '' ? 'message' : event, data: data.join('\n'), id })
      data = []
      return out
    },
  }
}
