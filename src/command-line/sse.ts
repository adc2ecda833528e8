import { createParser } from 'eventsource-parser'

/** One Server-Sent Event: its name (default `message`), its data parsed as JSON (the text when it is not). */
export interface SseEvent {
  event: string
  data: unknown
  id: string | undefined
}

/** The events of an SSE response body, as they arrive. */
export async function* sseEvents(res: Response): AsyncGenerator<SseEvent> {
  if (res.body === null) return
  const queue: SseEvent[] = []
  const parser = createParser({
    onEvent(e) {
      let data: unknown = e.data
      try {
        data = JSON.parse(e.data)
      } catch {
        // plain text data stays text
      }
      queue.push({ event: e.event ?? 'message', data, id: e.id })
    },
  })
  const decoder = new TextDecoder()
  for await (const chunk of res.body) {
    parser.feed(decoder.decode(chunk, { stream: true }))
    while (queue.length > 0) yield queue.shift() as SseEvent
  }
}
