import { createParser } from 'eventsource-parser'
import { errorOf, runtimeUrl } from './runtime.ts'

/*
 * Server-Sent Events over fetch, for the streams EventSource cannot open: a POST with a body
 * (`/chats/{id}/messages/stream`) and a resume carrying `Last-Event-ID`. Resolves when the stream
 * ends (or the signal aborts it); an answer other than 200 rejects with the API's error.
 */
export interface SseEvent {
  event: string
  data: unknown
  id: number | null
}

export async function fetchEventStream(
  path: string,
  onEvent: (e: SseEvent) => void,
  opts: {
    method?: 'GET' | 'POST'
    body?: unknown
    lastEventId?: number
    signal?: AbortSignal
    /** Called with the 200 answer before its first event (its headers: `x-channel-id`). */
    onOpen?: (res: Response) => void
  } = {},
): Promise<void> {
  const headers: Record<string, string> = { accept: 'text/event-stream' }
  if (opts.body !== undefined) headers['content-type'] = 'application/json'
  if (opts.lastEventId !== undefined) headers['last-event-id'] = String(opts.lastEventId)
  const res = await fetch(runtimeUrl(path), {
    method: opts.method ?? 'GET',
    credentials: 'same-origin',
    headers,
    body: opts.body === undefined ? null : JSON.stringify(opts.body),
    signal: opts.signal ?? null,
  })
  if (res.status !== 200 || res.body === null) throw await errorOf(res)
  opts.onOpen?.(res)
  const parser = createParser({
    onEvent(m) {
      let data: unknown = m.data
      try {
        data = JSON.parse(m.data)
      } catch {
        // a non-JSON data line is handed over as text
      }
      const id = m.id === undefined ? null : Number(m.id)
      onEvent({ event: m.event ?? 'message', data, id: Number.isFinite(id) ? id : null })
    },
  })
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      parser.feed(value)
    }
  } catch (err) {
    if (opts.signal?.aborted === true) return
    throw err
  } finally {
    reader.releaseLock()
  }
}
