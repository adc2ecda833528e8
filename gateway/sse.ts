import type { HttpResponse } from 'uWebSockets.js'
import type { MsgHdrs, NatsConnection, Subscription } from '@nats-io/transport-node'
import { DeliverPolicy, jetstream, type JetStreamClient } from '@nats-io/jetstream'
import type { Logger } from '../src/kernel/log.ts'
import type { NatsNames } from '../src/platform/nats-names.ts'
import { EVENT_HEADER, SEQUENCE_HEADER, isTerminalEvent, sseInSubject, sseLiveSubject, sseStreamName } from '../src/streaming/channel.ts'
import { sseGoneSubject, sseListenersWildcard } from '../src/streaming/listeners.ts'
import type { ResponseState } from './http.ts'

/*
 * Server-Sent Events relay: one stream channel (src/streaming/channel.ts) to one HTTP response.
 *
 * - New stream: the gateway picks the channel id and subscribes to `sse.live.<id>` *before* it
 *   forwards the request, so events the service publishes before its reply are buffered, not lost.
 * - Resume (the reply carries `last_id`) or a channel the gateway was not listening on: subscribe
 *   live first, then replay `sse.in.<id>` from the stream from `last_id + 1` until the stream has
 *   nothing newer or the first buffered live event is reached, then drain the buffer. Events are
 *   deduplicated by stream sequence, so there is no gap and no duplicate. The SUB goes out before
 *   the first replay request on the same connection, so the server registers it first: an event is
 *   either already stored (replayed) or republished to us (live). The replay starts with direct gets
 *   (`next_by_subj`, one round trip per event, no server state) and switches to an ordered consumer
 *   after DIRECT_REPLAY_LIMIT events: bench/sse.bench.ts measured ~4 ms for either on 20 events,
 *   but 58 ms vs 5 ms on 500.
 * - After a NATS reconnect every live stream catches up the same way (events published while the
 *   connection was down were stored, not delivered).
 * - Writes go through uWS `write`; when it reports backpressure the relay queues frames itself and
 *   flushes them from `onWritable`. More than `maxBufferBytes` written since the socket last drained
 *   completely drops the connection (logged); the client resumes with Last-Event-ID. A replay waits
 *   for the socket instead of queueing.
 * - One timer for all streams sends `: ping` to streams idle for `pingMs` and ends streams without
 *   an event for `idleTimeoutMs` with an `error` event `{detail, code: 'stream.timeout'}`.
 * - The client-disconnect signal (src/streaming/listeners.ts): a started stream that closes before
 *   relaying its channel's terminal event (client gone, dropped, gateway closing) publishes
 *   `sse.gone.<channel>`; the relay answers `sse.listeners.<channel>` with how many clients it
 *   relays the channel to (silent at zero), so the turn's worker can tell a reconnect from an
 *   abandoned stream.
 */
export interface SseSettings {
  /** A `: ping` comment after this long without a write. */
  pingMs: number
  /** Bytes a slow client may owe before the connection is dropped. */
  maxBufferBytes: number
  /** No event for this long ends the stream with `error` `stream.timeout`. */
  idleTimeoutMs: number
  /** Timeout of one replay request (direct get). */
  replayTimeoutMs?: number
}

export const SSE_DEFAULTS: SseSettings = { pingMs: 15_000, maxBufferBytes: 1024 * 1024, idleTimeoutMs: 660_000 }

export type SseFormat = 'platform' | 'openai'

interface Ev {
  seq: number
  event: string
  data: Uint8Array
}

const EVENT_NAME = /^[A-Za-z0-9_.-]{1,64}$/
/** Events replayed by direct get before a longer backlog is streamed by an ordered consumer. */
const DIRECT_REPLAY_LIMIT = 24
/**
 * Replays running at once per gateway. After a NATS reconnect every stream catches up; unbounded,
 * thousands of simultaneous direct gets and consumer creations time out on the JetStream API.
 */
const REPLAY_CONCURRENCY = 32
const encoder = new TextEncoder()
const PING = Buffer.from(': ping\n\n')
const OPEN = Buffer.from(':\n\n')
/** Written from onWritable when nothing is queued: uWS drains its buffer only on a write. */
const NUDGE = Buffer.from(':\n')
const OPENAI_DONE = Buffer.from('data: [DONE]\n\n')

/** An event from a republished or direct-get message (sequence in `Nats-Sequence`) or a consumer's (`knownSeq`). */
function toEvent(h: MsgHdrs | undefined, data: Uint8Array, knownSeq?: number): Ev | null {
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
  return Buffer.from(raw.toString('utf8').split(/\r\n|\r|\n/).join('\ndata: '))
}

function frame(format: SseFormat, ev: Ev): Buffer {
  if (format === 'openai' && ev.event === 'done') return OPENAI_DONE
  const head = format === 'platform' ? `id: ${String(ev.seq)}\nevent: ${ev.event}\ndata: ` : 'data: '
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

export class SseRelay {
  readonly streams = new Set<SseStream>()
  readonly settings: Required<SseSettings>
  private readonly timer: NodeJS.Timeout
  private readonly directSubject: string
  private closed = false
  private jsClient: JetStreamClient | undefined
  private replaying = 0
  private replayQueue: (() => void)[] = []
  /** Started streams per channel (the answer to listener questions). */
  private readonly listeners = new Map<string, number>()
  private readonly listenersSub: Subscription
  readonly nc: NatsConnection
  readonly names: NatsNames
  readonly log: Logger

  constructor(nc: NatsConnection, names: NatsNames, log: Logger, settings: Partial<SseSettings> = {}) {
    this.nc = nc
    this.names = names
    this.log = log
    this.settings = { replayTimeoutMs: 5_000, ...SSE_DEFAULTS, ...settings }
    this.directSubject = `$JS.API.DIRECT.GET.${sseStreamName(names)}`
    const tick = Math.min(1_000, Math.max(20, Math.min(this.settings.pingMs, this.settings.idleTimeoutMs) / 4))
    this.timer = setInterval(() => this.sweep(), tick)
    this.timer.unref()
    void this.watchReconnects()
    this.listenersSub = nc.subscribe(sseListenersWildcard(names), {
      callback: (err, msg) => {
        if (err !== null) return
        const count = this.listeners.get(msg.subject.slice(msg.subject.lastIndexOf('.') + 1)) ?? 0
        // Silent at zero: the worker takes "no gateway answered" as "nobody listens".
        if (count > 0) msg.respond(encoder.encode(String(count)))
      },
    })
  }

  /** A stream started relaying `channelId` to a client. */
  joined(channelId: string): void {
    this.listeners.set(channelId, (this.listeners.get(channelId) ?? 0) + 1)
  }

  /** A started stream closed; `gone`: before the channel's terminal event (the client may not come back). */
  left(channelId: string, gone: boolean): void {
    const n = (this.listeners.get(channelId) ?? 1) - 1
    if (n <= 0) this.listeners.delete(channelId)
    else this.listeners.set(channelId, n)
    if (gone) this.gone(channelId)
  }

  /** Tells the turn's worker a client of the channel went away (it checks for others after the reconnect window). */
  gone(channelId: string): void {
    if (!this.nc.isClosed()) this.nc.publish(sseGoneSubject(this.names, channelId))
  }

  /** Starts listening on a channel (before the request is forwarded); events are buffered until `start`. */
  open(channelId: string): SseStream {
    const s = new SseStream(this, channelId)
    this.streams.add(s)
    return s
  }

  /** The first stored event of the channel with sequence ≥ `seq`, or null when there is none (yet). */
  async fetch(channelId: string, seq: number): Promise<Ev | null> {
    const query = encoder.encode(JSON.stringify({ seq, next_by_subj: sseInSubject(this.names, channelId) }))
    const msg = await this.nc.request(this.directSubject, query, { timeout: this.settings.replayTimeoutMs })
    const h = msg.headers
    if (h?.code === 404) return null
    if (h === undefined || (h.code !== 0 && h.code !== 200)) throw new Error(`stream replay failed: ${String(h?.code)} ${h?.description ?? 'no headers'}`)
    const ev = toEvent(h, msg.data)
    if (ev === null) throw new Error('stream replay returned a message without sequence or event name')
    return ev
  }

  /** A replay slot (REPLAY_CONCURRENCY); `release` when done. */
  async acquire(): Promise<void> {
    if (this.replaying < REPLAY_CONCURRENCY) {
      this.replaying++
      return
    }
    await new Promise<void>((resolve) => this.replayQueue.push(resolve))
  }

  release(): void {
    const next = this.replayQueue.shift()
    if (next !== undefined) next()
    else this.replaying--
  }

  get js(): JetStreamClient {
    this.jsClient ??= jetstream(this.nc)
    return this.jsClient
  }

  /**
   * Streams the channel's stored events from `startSeq` (which exists) through an ordered
   * consumer; `onEvent` returns false to stop early. Ends when the consumer reports nothing pending.
   */
  async replay(channelId: string, startSeq: number, onEvent: (ev: Ev) => Promise<boolean>): Promise<void> {
    const consumer = await this.js.consumers.get(sseStreamName(this.names), {
      filter_subjects: sseInSubject(this.names, channelId),
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: startSeq,
    })
    const iter = await consumer.consume({ max_messages: 128 })
    let stalled = false
    const timeoutMs = this.settings.replayTimeoutMs
    let watchdog = setTimeout(() => {
      stalled = true
      void iter.close()
    }, timeoutMs)
    try {
      for await (const m of iter) {
        clearTimeout(watchdog)
        const ev = toEvent(m.headers, m.data, m.seq)
        if (ev === null) throw new Error('stream replay returned a message without an event name')
        if (!(await onEvent(ev)) || m.info.pending === 0) break
        watchdog = setTimeout(() => {
          stalled = true
          void iter.close()
        }, timeoutMs)
      }
    } finally {
      clearTimeout(watchdog)
      await iter.close()
      void consumer.delete().catch(() => undefined)
    }
    if (stalled) throw new Error(`stream replay: no message within ${String(timeoutMs)} ms`)
  }

  /** Ends every open stream (gateway shutdown): clients reconnect elsewhere and resume. */
  close(): void {
    this.closed = true
    clearInterval(this.timer)
    this.listenersSub.unsubscribe()
    for (const s of [...this.streams]) s.drop('gateway closing')
  }

  private sweep(): void {
    const now = performance.now()
    const { pingMs, idleTimeoutMs } = this.settings
    for (const s of this.streams) s.tick(now, pingMs, idleTimeoutMs)
  }

  private async watchReconnects(): Promise<void> {
    for await (const st of this.nc.status()) {
      if (this.closed) break
      if (st.type !== 'reconnect') continue
      // Events stored while the connection was down reached nobody: catch every live stream up.
      let n = 0
      for (const s of this.streams) if (s.resync()) n++
      if (n > 0) this.log.info({ streams: n }, 'sse streams catching up after a nats reconnect')
    }
  }
}

type Phase = 'listening' | 'replaying' | 'live' | 'closed'

export class SseStream {
  private phase: Phase = 'listening'
  private sub: Subscription
  private channel: string
  private format: SseFormat = 'platform'
  private res: HttpResponse | undefined
  private rstate: ResponseState | undefined
  /** Live events held while listening or replaying. */
  private pending: Ev[] = []
  private pendingBytes = 0
  /** The pending buffer overflowed: replay again from the stream before going live. */
  private lost = false
  private lastSeq = 0
  private lastEventAt = 0
  private lastWriteAt = 0
  /** uWS reported backpressure: frames wait in `queue` until onWritable. */
  private blocked = false
  private queue: Buffer[] = []
  /** Bytes written or queued since the socket last drained completely (an upper bound of what is owed). */
  private owed = 0
  private drained: (() => void)[] = []
  private events = 0
  /** The channel counted as listened to (set once the response started). */
  private counted: string | null = null
  /** The channel's terminal event was relayed: closing now is no departure. */
  private terminal = false
  private readonly relay: SseRelay

  constructor(relay: SseRelay, channelId: string) {
    this.relay = relay
    this.channel = channelId
    this.sub = this.subscribe()
  }

  get channelId(): string {
    return this.channel
  }

  private subscribe(): Subscription {
    return this.relay.nc.subscribe(sseLiveSubject(this.relay.names, this.channel), {
      callback: (err, msg) => {
        if (err !== null) {
          this.relay.log.error({ err, channel: this.channel }, 'sse live subscription failed')
          this.fail('stream.unavailable', 'the event stream is unavailable; reconnect with Last-Event-ID')
          return
        }
        const ev = toEvent(msg.headers, msg.data)
        if (ev !== null) this.onLive(ev)
      },
    })
  }

  private onLive(ev: Ev): void {
    if (this.phase === 'live') {
      this.deliver(ev)
      return
    }
    if (this.phase === 'closed') return
    this.pending.push(ev)
    this.pendingBytes += ev.data.byteLength + 32
    if (this.pendingBytes > this.relay.settings.maxBufferBytes) {
      // Nothing is lost: these events are in the stream, the replay picks them up.
      this.pending = []
      this.pendingBytes = 0
      this.lost = true
    }
  }

  /** The reply was not a stream: stop listening. */
  cancel(): void {
    this.close()
  }

  /**
   * Answers the request with `text/event-stream` and relays `target.channelId` from after
   * `target.lastId` (a resume) or from the first event (a new stream).
   */
  start(res: HttpResponse, rstate: ResponseState, target: { channelId: string; lastId: number | undefined }, format: SseFormat, extraHeaders: Record<string, string> = {}): void {
    if (rstate.aborted || rstate.done || this.phase === 'closed') {
      this.close()
      // The client left while the request was on its way: its turn may already be running.
      if (rstate.aborted) this.relay.gone(target.channelId)
      return
    }
    this.res = res
    this.rstate = rstate
    this.format = format
    rstate.done = true
    res.onAborted(() => {
      rstate.aborted = true
      this.close()
    })
    res.onWritable(() => this.onWritable())
    let replay = target.lastId !== undefined || this.lost
    if (target.channelId !== this.channel) {
      // Not the channel we listened on (a resume, or a turn continuing on an existing channel).
      this.sub.unsubscribe()
      this.channel = target.channelId
      this.pending = []
      this.pendingBytes = 0
      this.sub = this.subscribe()
      replay = true
    }
    this.counted = this.channel
    this.relay.joined(this.channel)
    this.lastSeq = target.lastId ?? 0
    this.lastEventAt = this.lastWriteAt = performance.now()
    res.cork(() => {
      res.writeStatus('200 OK')
      res.writeHeader('x-request-id', rstate.requestId)
      for (const [k, v] of rstate.headers) res.writeHeader(k, v)
      for (const k in extraHeaders) res.writeHeader(k, extraHeaders[k] as string)
      res.writeHeader('content-type', 'text/event-stream; charset=utf-8')
      res.writeHeader('cache-control', 'no-cache')
      res.writeHeader('x-accel-buffering', 'no')
      res.writeHeader('x-channel-id', this.channel)
      if (!res.write(OPEN)) {
        this.blocked = true
        this.owed = OPEN.length
      }
    })
    if (replay) void this.catchUp()
    else this.goLive()
  }

  /** Replays from the stream after `lastSeq`, then drains the live buffer (no gap, no duplicate). */
  private async catchUp(): Promise<void> {
    this.phase = 'replaying'
    await this.relay.acquire()
    try {
      if (this.isClosed()) return
      do {
        this.lost = false
        let next = this.lastSeq + 1
        for (let n = 0; ; n++) {
          const first = this.pending[0]
          if (first !== undefined && first.seq <= next) break
          if (this.blocked) {
            await this.writable()
            if (this.isClosed()) return
            continue
          }
          const ev = await this.relay.fetch(this.channel, next)
          if (this.isClosed() || ev === null) break
          if (n >= DIRECT_REPLAY_LIMIT) {
            // A long backlog: stream the rest from `ev` (known to exist) with one ordered consumer.
            await this.relay.replay(this.channel, ev.seq, async (e) => {
              if (this.isClosed()) return false
              this.deliver(e)
              if (this.blocked) await this.writable()
              const head = this.pending[0]
              return !this.isClosed() && (head === undefined || head.seq > this.lastSeq + 1)
            })
            break
          }
          this.deliver(ev)
          if (this.isClosed()) return
          next = ev.seq + 1
        }
        if (this.isClosed()) return
      } while (this.lost)
    } catch (err) {
      if (this.isClosed()) return
      this.relay.log.warn({ err, channel: this.channel }, 'sse replay failed')
      this.fail('stream.unavailable', 'the event stream could not be replayed; reconnect with Last-Event-ID')
      return
    } finally {
      this.relay.release()
    }
    this.goLive()
  }

  private writable(): Promise<void> {
    return new Promise<void>((resolve) => this.drained.push(resolve))
  }

  private isClosed(): boolean {
    return this.phase === 'closed'
  }

  private goLive(): void {
    if (this.phase === 'closed') return
    this.phase = 'live'
    const held = this.pending
    this.pending = []
    this.pendingBytes = 0
    for (const ev of held) {
      if (this.phase !== 'live') return
      this.deliver(ev)
    }
  }

  /** After a NATS reconnect: replay what was stored meanwhile. True when a catch-up started. */
  resync(): boolean {
    if (this.phase === 'listening') {
      this.lost = true
      return true
    }
    if (this.phase !== 'live') return false
    void this.catchUp()
    return true
  }

  private deliver(ev: Ev): void {
    if (ev.seq <= this.lastSeq) return
    this.lastSeq = ev.seq
    this.lastEventAt = performance.now()
    this.events++
    this.write(frame(this.format, ev))
    if (isTerminalEvent(ev.event)) {
      this.terminal = true
      this.end()
    }
  }

  private write(buf: Buffer): void {
    const res = this.res
    if (res === undefined || this.phase === 'closed') return
    this.lastWriteAt = performance.now()
    if (this.blocked) {
      this.queue.push(buf)
      this.owed += buf.length
      if (this.owed > this.relay.settings.maxBufferBytes) this.overflow()
      return
    }
    let ok = true
    res.cork(() => {
      ok = res.write(buf)
    })
    if (!ok) {
      this.blocked = true
      this.owed = buf.length
    }
  }

  private onWritable(): boolean {
    const res = this.res
    if (!this.blocked || res === undefined || this.phase === 'closed') return true
    const q = this.queue
    const chunk = q.length === 0 ? NUDGE : q.length === 1 ? (q[0] as Buffer) : Buffer.concat(q)
    this.queue = []
    const ok = res.write(chunk)
    if (ok) {
      this.blocked = false
      this.owed = 0
      const waiting = this.drained
      this.drained = []
      for (const w of waiting) w()
    }
    return ok
  }

  private overflow(): void {
    this.relay.log.warn({ channel: this.channel, owed: this.owed, limit: this.relay.settings.maxBufferBytes, reqId: this.rstate?.requestId }, 'sse client too slow: connection dropped (it may resume with Last-Event-ID)')
    this.drop('slow client')
  }

  /** Closes the connection without a terminal event (the client can resume). */
  drop(_reason: string): void {
    const res = this.res
    const aborted = this.rstate?.aborted ?? true
    this.close()
    if (res !== undefined && !aborted) res.close()
  }

  tick(now: number, pingMs: number, idleTimeoutMs: number): void {
    if (this.res === undefined || this.phase === 'closed') return
    if (now - this.lastEventAt >= idleTimeoutMs) {
      this.fail('stream.timeout', `no event for ${String(Math.round(idleTimeoutMs / 1000))} s`)
      return
    }
    if (!this.blocked && now - this.lastWriteAt >= pingMs) this.write(PING)
  }

  /** Ends the stream with an `error` event made by the gateway (id: the last relayed sequence). */
  private fail(code: string, detail: string): void {
    if (this.phase === 'closed') return
    if (this.res === undefined) {
      // Still waiting for the reply: the stream simply does not start.
      this.close()
      return
    }
    const body = this.format === 'openai' ? { error: { message: detail, type: 'stream_error', code } } : { detail, code }
    this.write(frame(this.format, { seq: this.lastSeq, event: 'error', data: encoder.encode(JSON.stringify(body)) }))
    this.end()
  }

  /** After a terminal event: end the response once the queued frames are handed to uWS. */
  private end(): void {
    const res = this.res
    const aborted = this.rstate?.aborted ?? true
    const rest = this.queue.length === 0 ? undefined : Buffer.concat(this.queue)
    this.queue = []
    this.close()
    if (res === undefined || aborted) return
    res.cork(() => {
      if (rest === undefined) res.end()
      else res.end(rest)
    })
  }

  private close(): void {
    if (this.phase === 'closed') return
    this.phase = 'closed'
    this.sub.unsubscribe()
    this.relay.streams.delete(this)
    if (this.counted !== null) this.relay.left(this.counted, !this.terminal)
    this.pending = []
    this.queue = []
    const waiting = this.drained
    this.drained = []
    for (const w of waiting) w()
    if (this.res !== undefined) this.relay.log.debug({ channel: this.channel, events: this.events, reqId: this.rstate?.requestId }, 'sse stream closed')
  }
}
