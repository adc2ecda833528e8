import { pooledRandomBytes } from '../kernel/pooled-random.ts'
import { headers as natsHeaders, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node'
import type { JetStreamClient } from '@nats-io/jetstream'
import type { RpcReply } from '../api/route.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { ackedPublisherOf } from '../platform/acked-publish.ts'

/*
 * Stream channels: the transport of Server-Sent Events (chat turns, later the OpenAI adapter's
 * streaming). A service or worker publishes events on `sse.in.<channel>`, which the file stream
 * `SSE` (max_age 1 h, provisioned in src/platform/nats.ts) stores and republishes to
 * `sse.live.<channel>` with a `Nats-Sequence` header. The gateway (gateway/sse.ts) relays a channel
 * to an HTTP client: live from the core subject, replayed from the stream on resume. The stream
 * sequence is the SSE `id:`, so `Last-Event-ID` resumes without a gap or a duplicate.
 *
 * Message layout: the data is the event's JSON payload as is (the gateway copies the bytes to the
 * socket without parsing them); the event name rides in the `Sse-Event` header.
 */

/** A channel ends with exactly one of these events; the gateway ends the HTTP response after it. */
export const TERMINAL_EVENTS = ['done', 'error'] as const
export type TerminalEvent = (typeof TERMINAL_EVENTS)[number]
export const isTerminalEvent = (event: string): boolean => event === 'done' || event === 'error'

/** NATS header carrying the SSE event name. */
export const EVENT_HEADER = 'Sse-Event'
/** Set by JetStream on republished and direct-get messages: the stream sequence, the SSE `id:`. */
export const SEQUENCE_HEADER = 'Nats-Sequence'

/** Subject-safe (no `.`, `*`, `>`, spaces) and URL-safe; bounded so subjects stay short. */
const CHANNEL_ID = /^[A-Za-z0-9_-]{1,64}$/
const EVENT_NAME = /^[A-Za-z0-9_.-]{1,64}$/

export const isChannelId = (id: string): boolean => CHANNEL_ID.test(id)

/** 128 random bits, base64url (22 characters): URL-safe and a single subject token. */
export const newChannelId = (): string => pooledRandomBytes(16).toString('base64url')

export interface StreamEvent {
  /** SSE event name (`message`, `tool_start`, …, `done`, `error`); letters, digits, `_ . -`. */
  event: string
  /** JSON payload; `undefined` is sent as `null`. */
  data: unknown
}

export const sseStreamName = (names: NatsNames): string => names.stream('SSE')
export const sseInSubject = (names: NatsNames, channelId: string): string => names.subject(`sse.in.${channelId}`)
export const sseLiveSubject = (names: NatsNames, channelId: string): string => names.subject(`sse.live.${channelId}`)

const encoder = new TextEncoder()

function encode(
  names: NatsNames,
  channelId: string,
  ev: StreamEvent,
): { subject: string; headers: MsgHdrs; data: Uint8Array } {
  if (!CHANNEL_ID.test(channelId)) throw new Error(`invalid stream channel id ${JSON.stringify(channelId)}`)
  if (!EVENT_NAME.test(ev.event)) throw new Error(`invalid stream event name ${JSON.stringify(ev.event)}`)
  const headers = natsHeaders()
  headers.set(EVENT_HEADER, ev.event)
  // JSON.stringify never emits a raw newline, so the payload fits one SSE `data:` line.
  return { subject: sseInSubject(names, channelId), headers, data: encoder.encode(JSON.stringify(ev.data ?? null)) }
}

/**
 * Publishes one event and waits for the stream's acknowledgement: resolves with the stream
 * sequence (the event's SSE id). Events published from one connection are stored in call order,
 * so several calls may be in flight at once (do not await each) without reordering.
 */
export async function publishStreamEvent(
  js: JetStreamClient,
  names: NatsNames,
  channelId: string,
  ev: StreamEvent,
): Promise<number> {
  const m = encode(names, channelId, ev)
  const ack = await ackedPublisherOf(js).publish(m.subject, m.data, { headers: m.headers })
  return ack.seq
}

/**
 * Fire-and-forget: a core publish on the stream's subject, which the stream still stores and
 * republishes (same sequence, same ordering), but without a PubAck. No reply inbox, promise or
 * timer per event; measured in bench/sse.bench.ts against the acknowledged publish. The price: a
 * failure (stream missing, server unreachable beyond the client's reconnect buffer) goes unnoticed.
 * Use it for high-rate deltas and `await publishStreamEvent` for the terminal event: its ack comes
 * after the earlier events of the same connection were stored, and a failing stream shows there.
 */
export function publishStreamEventNoAck(
  nc: NatsConnection,
  names: NatsNames,
  channelId: string,
  ev: StreamEvent,
): void {
  const m = encode(names, channelId, ev)
  nc.publish(m.subject, m.data, { headers: m.headers })
}

/** The body a stream route's handler answers with (status 200). */
export interface StreamReplyBody {
  stream: {
    channel_id: string
    /** Resume after this stream sequence (Last-Event-ID); absent for a new stream. */
    last_id?: number
  }
}

/**
 * The reply of a stream route's handler: relay `channelId` to the client. For a new stream pass
 * `req.streamChannelId` (the gateway already listens on it, so no early event is lost). For a
 * resume pass the channel and `req.streamLastId ?? 0` (the client's Last-Event-ID / `?last_id=`):
 * the gateway replays the stored events after it, then continues live.
 */
export function streamReply(channelId: string, lastId?: number): RpcReply & { body: StreamReplyBody } {
  if (!CHANNEL_ID.test(channelId)) throw new Error(`invalid stream channel id ${JSON.stringify(channelId)}`)
  if (lastId !== undefined && !(Number.isSafeInteger(lastId) && lastId >= 0))
    throw new Error(`invalid stream last id ${String(lastId)}`)
  return {
    status: 200,
    body: { stream: { channel_id: channelId, ...(lastId === undefined ? {} : { last_id: lastId }) } },
  }
}

/** Reads a stream reply body; null when the body is anything else (it is then sent as plain JSON). */
export function parseStreamReply(body: unknown): { channelId: string; lastId: number | undefined } | null {
  if (typeof body !== 'object' || body === null) return null
  const s = (body as { stream?: unknown }).stream
  if (typeof s !== 'object' || s === null) return null
  const { channel_id: channelId, last_id: lastId } = s as { channel_id?: unknown; last_id?: unknown }
  if (typeof channelId !== 'string' || !CHANNEL_ID.test(channelId)) return null
  if (lastId !== undefined && !(typeof lastId === 'number' && Number.isSafeInteger(lastId) && lastId >= 0)) return null
  return { channelId, lastId: lastId as number | undefined }
}

/** `Last-Event-ID` / `?last_id=` text → a stream sequence; undefined when absent, null when malformed. */
export function parseLastId(text: string): number | undefined | null {
  if (text === '') return undefined
  if (!/^\d{1,15}$/.test(text)) return null
  return Number(text)
}
