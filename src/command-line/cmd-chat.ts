import { optionText, type ParsedArgs } from './args.ts'
import { clientOf } from './cmd-config.ts'
import { address } from './cmd-run.ts'
import { lineReader, paint, readJsonArg, type Io } from './io.ts'
import { sseEvents } from './sse.ts'

/*
 * `chat <ns>/<agent>`: a chat (`POST /agents/{ns}/{name}/chats`), then each message sent with
 * `POST /chats/{id}/messages/stream`, its Server-Sent Events printed as they arrive: `message`
 * deltas as text, `tool_start` / `tool_end` on their own lines, `done` / `error` end the turn.
 * Ctrl-C during a turn drops the stream: the platform cancels a turn nobody listens to once its
 * reconnect window has passed (SSE_RECONNECT_WINDOW_SECONDS).
 */

const short = (v: unknown, max = 200): string => {
  const text = typeof v === 'string' ? v : (JSON.stringify(v) ?? '')
  return text.length > max ? `${text.slice(0, max - 1)}…` : text
}

/** Streams one turn; 'done', 'error' (the turn failed) or 'stopped' (Ctrl-C). */
async function turn(
  a: ParsedArgs,
  io: Io,
  chatId: string,
  content: string,
  signal: AbortSignal,
): Promise<'done' | 'error' | 'stopped'> {
  let res: Response
  try {
    res = await clientOf(a).raw('POST', `/chats/${encodeURIComponent(chatId)}/messages/stream`, {
      body: { content },
      signal,
      accept: 'text/event-stream',
    })
  } catch (err) {
    if (signal.aborted) return 'stopped'
    throw err
  }
  let atLineStart = true
  const line = (text: string) => {
    io.out(`${atLineStart ? '' : '\n'}${text}\n`)
    atLineStart = true
  }
  try {
    for await (const ev of sseEvents(res)) {
      const d = (typeof ev.data === 'object' && ev.data !== null ? ev.data : {}) as Record<string, unknown>
      if (ev.event === 'message') {
        const text = typeof d['content'] === 'string' ? d['content'] : ''
        if (text !== '') {
          io.out(text)
          atLineStart = text.endsWith('\n')
        }
      } else if (ev.event === 'tool_start') line(paint(io, '36', `⚙ ${String(d['name'])}(${short(d['arguments'])})`))
      else if (ev.event === 'tool_end') line(paint(io, '36', `✓ ${String(d['name'])} → ${short(d['result'])}`))
      else if (ev.event === 'approval_required')
        line(paint(io, '35', `? ${String(d['name'] ?? 'a tool')} waits for approval (${short(d)})`))
      else if (ev.event === 'error') {
        line(paint(io, '31', `error: ${short(d['detail'] ?? d['message'] ?? d['error'] ?? ev.data)}`))
        return 'error'
      } else if (ev.event === 'done') {
        if (!atLineStart) io.out('\n')
        return d['status'] === 'failed' ? 'error' : 'done'
      }
    }
  } catch (err) {
    if (signal.aborted) {
      line(paint(io, '2', '(stopped)'))
      return 'stopped'
    }
    throw err
  }
  if (signal.aborted) {
    line(paint(io, '2', '(stopped)'))
    return 'stopped'
  }
  line(paint(io, '31', 'error: the stream ended without its last event'))
  return 'error'
}

export async function chat(a: ParsedArgs, io: Io): Promise<number> {
  const { namespace, name } = address(a.positional[0] as string, 'agent')
  const input = optionText(a, 'input')
  const created = await clientOf(a).json<{ id: string }>('POST', `/agents/${namespace}/${name}/chats`, {
    ...(input === undefined ? {} : { input: readJsonArg(input, '--input') }),
  })
  const one = optionText(a, 'message')
  if (one !== undefined) {
    const controller = new AbortController()
    const stop = () => controller.abort()
    process.once('SIGINT', stop)
    const r = await turn(a, io, created.id, one, controller.signal)
    process.off('SIGINT', stop)
    return r === 'done' ? 0 : r === 'stopped' ? 130 : 1
  }
  io.err(`Chat ${created.id} with ${a.positional[0] as string}. Ctrl-C stops a turn; Ctrl-D exits.\n`)
  const reader = lineReader()
  let current: AbortController | null = null
  // Ctrl-C at the prompt closes the reader: the pending question answers null and the loop ends
  reader.onInterrupt(() => {
    if (current !== null) current.abort()
    else reader.close()
  })
  try {
    for (;;) {
      const text = await reader.ask(paint(io, '1', 'you> '))
      if (text === null) break
      if (text.trim() === '') continue
      current = new AbortController()
      await turn(a, io, created.id, text, current.signal)
      current = null
    }
  } finally {
    reader.close()
  }
  return 0
}
