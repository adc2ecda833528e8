import type { MsgHdrs } from '@nats-io/transport-node'
import { EVENT_HEADER, SEQUENCE_HEADER } from '../src/streaming/channel.ts'

/** One event of a stream channel: its stream sequence (the SSE id), name and payload. */
export interface SseEvent {
  seq: number
  event: string
  data: Uint8Array
}

export type SseFormat = 'platform' | 'openai' | 'mcp'

const EVENT_NAME = /^[A-Za-z0-9_.-]{1,64}$/
const OPENAI_DONE = Buffer.from('data: [DONE]\n\n')

/** An event from a republished or direct-get message (sequence in `Nats-Sequence`) or a consumer's (`knownSeq`). */
export function toEvent(h: MsgHdrs | undefined, data: Uint8Array, knownSeq?: number): SseEvent | null {
  if (h === undefined) return null
  const seq = knownSeq ?? Number(h.get(SEQUENCE_HEADER))
  const event = h.get(EVENT_HEADER)
  if (!Number.isSafeInteger(seq) || seq <= 0 || !EVENT_NAME.test(event)) return null
  return { seq, event, data }
}

/** The payload as one or more `data:` lines (a JSON payload is always one line). */
function dataLines(data: Uint8Array): Buffer {
  const raw = Buffer.from(data.buffer, data.byteOffset, data.byteLength)
  if (raw.indexOf(10) === -1 && raw.indexOf(13) === -1) return raw
  return Buffer.from(
    raw
      .toString('utf8')
      .split(/\r\n|\r|\n/)
      .join('\ndata: '),
  )
}

/**
 * The event as SSE bytes: `id`/`event`/`data` (platform), `data` only with `[DONE]` after `done`
 * and `error` (openai), or `id`/`data` (mcp: every event, the terminal one included, carries a
 * JSON-RPC message under the default event type `message`).
 */
export function frame(format: SseFormat, ev: SseEvent): Buffer {
  if (format === 'openai' && ev.event === 'done') return OPENAI_DONE
  const head =
    format === 'platform'
      ? `id: ${String(ev.seq)}\nevent: ${ev.event}\ndata: `
      : format === 'mcp'
        ? `id: ${String(ev.seq)}\ndata: `
        : 'data: '
  const body = dataLines(ev.data)
  const tail = format === 'openai' && ev.event === 'error' ? OPENAI_DONE.length : 0
  const out = Buffer.allocUnsafe(head.length + body.length + 2 + tail)
  out.write(head, 0, 'latin1')
  out.set(body, head.length)
  out[head.length + body.length] = 10
  out[head.length + body.length + 1] = 10
  if (tail > 0) OPENAI_DONE.copy(out, head.length + body.length + 2)
  return out
}
