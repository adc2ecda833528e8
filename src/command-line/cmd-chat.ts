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

interface Approval {
  tool_call_id: string
  function_namespace: string
  function_name: string
  arguments: unknown
}

/** Asks whether a tool call may run: true / false, or null when nobody answers (stdin ended). */
export type Decide = (approval: Approval) => Promise<boolean | null>

type Outcome = 'done' | 'error' | 'stopped' | 'awaiting'

/** Prints one stream of a turn; `awaiting` when it paused for approvals (collected in `approvals`). */
async function printStream(
  io: Io,
  open: () => Promise<Response>,
  signal: AbortSignal,
  approvals: Approval[],
): Promise<Outcome> {
  let res: Response
  try {
    res = await open()
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
      else if (ev.event === 'approval_required') approvals.push(d as unknown as Approval)
      else if (ev.event === 'error') {
        line(paint(io, '31', `error: ${short(d['detail'] ?? d['message'] ?? d['error'] ?? ev.data)}`))
        return 'error'
      } else if (ev.event === 'done') {
        if (!atLineStart) io.out('\n')
        if (d['status'] === 'awaiting_approval') return 'awaiting'
        return d['status'] === 'failed' ? 'error' : 'done'
      }
    }
  } catch (err) {
    if (!signal.aborted) throw err
  }
  if (signal.aborted) {
    line(paint(io, '2', '(stopped)'))
    return 'stopped'
  }
  line(paint(io, '31', 'error: the stream ended without its last event'))
  return 'error'
}

/**
 * One turn: the message sent and its stream printed; a turn that pauses for tool approvals asks
 * for each (`decide`), answers them (`POST /chats/{id}/approve-tool/{call}`) and follows the
 * turn on the channel the answer names (`GET /chats/{id}/stream/{channel}`).
 */
async function turn(
  a: ParsedArgs,
  io: Io,
  chatId: string,
  content: string,
  signal: AbortSignal,
  decide: Decide,
): Promise<'done' | 'error' | 'stopped'> {
  const client = clientOf(a)
  const chat = encodeURIComponent(chatId)
  const sse = { signal, accept: 'text/event-stream' }
  let approvals: Approval[] = []
  let outcome = await printStream(
    io,
    () => client.raw('POST', `/chats/${chat}/messages/stream`, { ...sse, body: { content } }),
    signal,
    approvals,
  )
  while (outcome === 'awaiting') {
    const pending = approvals
    approvals = []
    let channel: string | undefined
    for (const ap of pending) {
      const approved = await decide(ap)
      if (approved === null) {
        io.err(`(${ap.function_namespace}/${ap.function_name} still waits for approval)\n`)
        return 'error'
      }
      const answer = await client.json<{ channel_id: string }>(
        'POST',
        `/chats/${chat}/approve-tool/${encodeURIComponent(ap.tool_call_id)}`,
        { approved },
      )
      channel = answer.channel_id
    }
    if (channel === undefined) return 'error'
    const resume = `/chats/${chat}/stream/${encodeURIComponent(channel)}`
    outcome = await printStream(io, () => client.raw('GET', resume, sse), signal, approvals)
  }
  return outcome
}

const approvalQuestion = (io: Io, ap: Approval): string =>
  paint(io, '35', `? allow ${ap.function_namespace}/${ap.function_name}(${short(ap.arguments)})? [y/N] `)

const yes = (answer: string): boolean => /^y(es)?$/i.test(answer.trim())

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
    const decide: Decide = async (ap) => {
      const r = lineReader()
      try {
        io.err(approvalQuestion(io, ap))
        const answer = await r.ask('')
        return answer === null ? null : yes(answer)
      } finally {
        r.close()
      }
    }
    const r = await turn(a, io, created.id, one, controller.signal, decide)
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
      const decide: Decide = async (ap) => {
        // the question on stderr even when stdin is piped: a script answers what it reads
        io.err(approvalQuestion(io, ap))
        const answer = await reader.ask('')
        return answer === null ? null : yes(answer)
      }
      try {
        await turn(a, io, created.id, text, current.signal, decide)
      } catch (err) {
        // a refused message (the chat is busy, expired) ends that turn, not the chat
        io.err(paint(io, '31', `error: ${(err as Error).message}\n`))
      }
      current = null
    }
  } finally {
    reader.close()
  }
  return 0
}
