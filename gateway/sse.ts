import type { HttpResponse } from 'uWebSockets.js'
import type { NatsConnection, Subscription } from '@nats-io/transport-node'
import { DeliverPolicy, jetstream, type JetStreamClient } from '@nats-io/jetstream'
import type { Logger } from '../src/kernel/log.ts'
import type { NatsNames } from '../src/platform/nats-names.ts'
import { isTerminalEvent, sseInSubject, sseLiveSubject, sseStreamName } from '../src/streaming/channel.ts'
import { sseGoneSubject, sseListenersWildcard } from '../src/streaming/listeners.ts'
import type { ResponseState } from './http.ts'
import { frame, toEvent, type SseEvent, type SseFormat } from './sse-frame.ts'
import { writeSseHead } from './sse-head.ts'
import { HeldEvents } from './sse-held-events.ts'
import { replayStored, type ReplayTarget } from './sse-replay.ts'
import { SseBatch, SseWriter } from './sse-writer.ts'

export type { SseFormat } from './sse-frame.ts'

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
 * - Writes go through uWS `write`, batched per stream and event-loop turn (`sse-writer.ts`: the
 *   events of one NATS delivery batch for one stream leave in one corked write, one syscall); when
 *   uWS reports backpressure the relay queues frames itself and flushes them from `onWritable`. More than `maxBufferBytes` written since the socket last drained
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

const encoder = new TextEncoder()
/**
 * Replays running at once per gateway. After a NATS reconnect every stream catches up; unbounded,
 * thousands of simultaneous direct gets and consumer creations time out on the JetStream API.
 */
const REPLAY_CONCURRENCY = 32
const PING = Buffer.from(': ping\n\n')
const OPEN = Buffer.from(':\n\n')

export class SseRelay {
  readonly streams = new Set<SseStream>()
  /** The writers with frames to hand to uWS at the end of this event-loop turn. */
  readonly batch = new SseBatch()
  /** Events relayed (counted for `gateway.sseStats()`; the writes are counted by `batch`). */
  events = 0
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
  async fetch(channelId: string, seq: number): Promise<SseEvent | null> {
    const query = encoder.encode(JSON.stringify({ seq, next_by_subj: sseInSubject(this.names, channelId) }))
    const msg = await this.nc.request(this.directSubject, query, { timeout: this.settings.replayTimeoutMs })
    const h = msg.headers
    if (h?.code === 404) return null
    if (h === undefined || (h.code !== 0 && h.code !== 200))
      throw new Error(`stream replay failed: ${String(h?.code)} ${h?.description ?? 'no headers'}`)
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
  async replay(channelId: string, startSeq: number, onEvent: (ev: SseEvent) => Promise<boolean>): Promise<void> {
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

/**
 * One client's stream: listens on the live subject from before the reply, then relays the channel
 * to the response (replaying what it missed, `sse-replay.ts`) until a terminal event, a drop or the
 * client leaving. The write side is `sse-writer.ts`, the live events held meanwhile `sse-held-events.ts`.
 */
export class SseStream {
  private phase: Phase = 'listening'
  private sub: Subscription
  private channel: string
  private format: SseFormat = 'platform'
  private rstate: ResponseState | undefined
  private readonly held: HeldEvents
  private readonly out: SseWriter
  private lastSeq = 0
  private lastEventAt = 0
  private lastWriteAt = 0
  private events = 0
  /** The channel counted as listened to (set once the response started). */
  private counted: string | null = null
  /** The channel's terminal event was relayed: closing now is no departure. */
  private terminal = false
  private readonly relay: SseRelay

  constructor(relay: SseRelay, channelId: string) {
    this.relay = relay
    this.channel = channelId
    this.held = new HeldEvents(relay.settings.maxBufferBytes)
    this.out = new SseWriter(relay.settings.maxBufferBytes, relay.batch)
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

  private onLive(ev: SseEvent): void {
    if (this.phase === 'live') this.deliver(ev)
    else if (this.phase !== 'closed') this.held.hold(ev)
  }

  /** The reply was not a stream: stop listening. */
  cancel(): void {
    this.close()
  }

  /**
   * Answers the request with `text/event-stream` and relays `target.channelId` from after
   * `target.lastId` (a resume) or from the first event (a new stream).
   */
  start(
    res: HttpResponse,
    rstate: ResponseState,
    target: { channelId: string; lastId: number | undefined },
    format: SseFormat,
    extraHeaders: Record<string, string> = {},
  ): void {
    if (rstate.aborted || rstate.done || this.phase === 'closed') {
      this.close()
      // The client left while the request was on its way: its turn may already be running.
      if (rstate.aborted) this.relay.gone(target.channelId)
      return
    }
    this.out.attach(res)
    this.rstate = rstate
    this.format = format
    rstate.done = true
    res.onAborted(() => {
      rstate.aborted = true
      this.close()
    })
    res.onWritable(() => this.phase === 'closed' || this.out.onWritable(res))
    let replay = target.lastId !== undefined || this.held.lost
    if (target.channelId !== this.channel) {
      // Not the channel we listened on (a resume, or a turn continuing on an existing channel).
      this.sub.unsubscribe()
      this.channel = target.channelId
      this.held.clear()
      this.sub = this.subscribe()
      replay = true
    }
    this.counted = this.channel
    this.relay.joined(this.channel)
    this.lastSeq = target.lastId ?? 0
    this.lastEventAt = this.lastWriteAt = performance.now()
    res.cork(() => {
      writeSseHead(res, rstate, this.channel, extraHeaders)
      this.out.open(res, OPEN)
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
      await replayStored(this.replayTarget(), this.relay)
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

  private replayTarget(): ReplayTarget {
    return {
      channel: this.channel,
      held: this.held,
      out: this.out,
      lastSeq: () => this.lastSeq,
      isClosed: () => this.isClosed(),
      deliver: (ev) => {
        this.deliver(ev)
        // At once, not at the end of the turn: the replay waits on `isBlocked` before its next event.
        this.out.flush()
      },
    }
  }

  private isClosed(): boolean {
    return this.phase === 'closed'
  }

  private goLive(): void {
    if (this.phase === 'closed') return
    this.phase = 'live'
    for (const ev of this.held.take()) {
      if (this.phase !== 'live') return
      this.deliver(ev)
    }
  }

  /** After a NATS reconnect: replay what was stored meanwhile. True when a catch-up started. */
  resync(): boolean {
    if (this.phase === 'listening') {
      this.held.lost = true
      return true
    }
    if (this.phase !== 'live') return false
    void this.catchUp()
    return true
  }

  private deliver(ev: SseEvent): void {
    if (ev.seq <= this.lastSeq) return
    this.lastSeq = ev.seq
    this.lastEventAt = performance.now()
    this.events++
    this.relay.events++
    this.write(frame(this.format, ev))
    if (isTerminalEvent(ev.event)) {
      this.terminal = true
      this.end()
    }
  }

  private write(buf: Buffer): void {
    if (this.out.res === undefined || this.phase === 'closed') return
    this.lastWriteAt = performance.now()
    if (!this.out.write(buf)) this.overflow()
  }

  private overflow(): void {
    this.relay.log.warn(
      {
        channel: this.channel,
        owed: this.out.owed,
        limit: this.relay.settings.maxBufferBytes,
        reqId: this.rstate?.requestId,
      },
      'sse client too slow: connection dropped (it may resume with Last-Event-ID)',
    )
    this.drop('slow client')
  }

  /** Closes the connection without a terminal event (the client can resume). */
  drop(_reason: string): void {
    const res = this.out.res
    const aborted = this.rstate?.aborted ?? true
    this.close()
    if (res !== undefined && !aborted) res.close()
  }

  tick(now: number, pingMs: number, idleTimeoutMs: number): void {
    if (this.out.res === undefined || this.phase === 'closed') return
    if (now - this.lastEventAt >= idleTimeoutMs) {
      this.fail('stream.timeout', `no event for ${String(Math.round(idleTimeoutMs / 1000))} s`)
      return
    }
    if (!this.out.isBlocked && now - this.lastWriteAt >= pingMs) this.write(PING)
  }

  /** Ends the stream with an `error` event made by the gateway (id: the last relayed sequence). */
  private fail(code: string, detail: string): void {
    if (this.phase === 'closed') return
    if (this.out.res === undefined) {
      // Still waiting for the reply: the stream simply does not start.
      this.close()
      return
    }
    // mcp: the gateway does not know the request's JSON-RPC id, so a log notification says why the stream ended
    const body =
      this.format === 'openai'
        ? { error: { message: detail, type: 'stream_error', code } }
        : this.format === 'mcp'
          ? { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'error', data: { detail, code } } }
          : { detail, code }
    this.write(frame(this.format, { seq: this.lastSeq, event: 'error', data: encoder.encode(JSON.stringify(body)) }))
    this.end()
  }

  /** After a terminal event: end the response once the queued frames are handed to uWS. */
  private end(): void {
    const res = this.out.res
    const aborted = this.rstate?.aborted ?? true
    const rest = this.out.takeQueued()
    this.close()
    if (res === undefined || aborted) return
    if (rest !== undefined) this.relay.batch.writes++
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
    this.held.clear()
    this.out.release()
    if (this.out.res !== undefined)
      this.relay.log.debug(
        { channel: this.channel, events: this.events, reqId: this.rstate?.requestId },
        'sse stream closed',
      )
  }
}
