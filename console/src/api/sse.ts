import { errorOf, proxyUrl, UNSAFE } from './client.ts'

/*
 * Server-Sent Events through the console proxy with fetch (not EventSource: it cannot POST, and a
 * fetch carries the console's cookies and CSRF header like every other call). Parses the platform
 * format (`id:`, `event:`, `data:` lines), resumes with Last-Event-ID after a dropped connection,
 * and resolves when the stream ends (the server closed it) or the signal aborts.
 */
export interface StreamEvent {
  event: string
  data: string
  id?: string
}

export interface EventStreamOptions {
  signal: AbortSignal
  /** Resume after this event id (sent as Last-Event-ID). */
  lastEventId?: string
  /** POST streams (`/chats/{id}/messages/stream`): the method and JSON body. GET by default. */
  method?: string
  body?: unknown
  /** Reconnect after a network drop (with the last id seen); default true for GET streams. */
  reconnect?: boolean
}

/**
 * Opens a platform event stream. `path` is a runtime route at the API root
 * (e.g. `/chats/{id}/stream/{channel_id}`); a path under `/api/v1/…` is taken as it is.
 */
export async function openEventStream(
  path: string,
  onEvent: (ev: StreamEvent) => void,
  opts: EventStreamOptions,
): Promise<void> {
  const method = (opts.method ?? 'GET').toUpperCase()
  const reconnect = opts.reconnect ?? method === 'GET'
  let lastId = opts.lastEventId
  const url = path.startsWith('/api/') ? path : proxyUrl(path, true)
  for (let attempt = 0; ; attempt++) {
    const headers: Record<string, string> = { accept: 'text/event-stream' }
    if (lastId !== undefined) headers['last-event-id'] = lastId
    if (UNSAFE.has(method)) headers['x-console-request'] = '1'
    const init: RequestInit = { method, headers, signal: opts.signal, credentials: 'same-origin' }
    if (opts.body !== undefined) {
      headers['content-type'] = 'application/json'
      init.body = JSON.stringify(opts.body)
    }
    let ended = false
    try {
      const res = await fetch(url, init)
      if (!res.ok) throw await errorOf(res)
      if (res.body === null) return
      ended = await readEvents(res.body, (ev) => {
        if (ev.id !== undefined) lastId = ev.id
        onEvent(ev)
      })
    } catch (err) {
      if (opts.signal.aborted) return
      // an answer of the API (4xx/5xx) is final; a dropped connection is retried below
      if ((err as { name?: string }).name === 'ApiError' || !reconnect || attempt >= 5) throw err
    }
    if (ended || opts.signal.aborted || !reconnect) return
    await new Promise((r) => setTimeout(r, Math.min(250 * 2 ** attempt, 4000)))
  }
}

/** Reads `text/event-stream` bytes; true when the stream ended with a `done` or `error` event. */
async function readEvents(body: ReadableStream<Uint8Array>, emit: (ev: StreamEvent) => void): Promise<boolean> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  let finished = false
  let ev: { event: string; data: string[]; id?: string } = { event: 'message', data: [] }
  for (;;) {
    const { value, done } = await reader.read()
    if (done) return true
    buffer += decoder.decode(value, { stream: true })
    let nl: number
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl).replace(/\r$/, '')
      buffer = buffer.slice(nl + 1)
      if (line === '') {
        if (ev.data.length > 0) {
          const out: StreamEvent = { event: ev.event, data: ev.data.join('\n') }
          if (ev.id !== undefined) out.id = ev.id
          emit(out)
          if (ev.event === 'done' || ev.event === 'error') finished = true
        }
        ev = { event: 'message', data: [] }
        continue
      }
      if (line.startsWith(':')) continue
      const colon = line.indexOf(':')
      const field = colon < 0 ? line : line.slice(0, colon)
      const val = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
      if (field === 'data') ev.data.push(val)
      else if (field === 'event') ev.event = val
      else if (field === 'id') ev.id = val
    }
    if (finished) {
      await reader.cancel().catch(() => undefined)
      return true
    }
  }
}
