import type { ExecutionEvent } from '../../schemas/job.ts'
import type { Caller } from '../auth/caller.ts'
import { loadPrincipal, type Principal } from '../auth/principal.ts'
import { AppError } from '../kernel/errors.ts'
import type { Logger } from '../kernel/log.ts'
import type { Db } from '../platform/db.ts'
import type { JetStreamClient } from '@nats-io/jetstream'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import type { ResourceService } from '../resources/service.ts'
import { publishStreamEvent, publishStreamEventNoAck } from '../streaming/channel.ts'
import { hasListeners, watchListeners, type ListenerWatch } from '../streaming/listeners.ts'
import { eventVisibility } from './visibility.ts'

/*
 * One relay per `GET /api/v1/events/stream`: a core NATS subscription on
 * `events.execution.<filter>` (live only: a tail, not a replay of the 24 h in EVENTS) whose
 * messages the caller may see are published on the request's stream channel as `execution`
 * events; the gateway relays the channel to the client (src/streaming/channel.ts), resumable with
 * Last-Event-ID like a chat turn. Such a stream has no natural end, so the relay ends itself:
 *
 * - when its client is gone: on `sse.gone` plus the reconnect window (`watchListeners`), and on
 *   each heartbeat when no gateway relays the channel any more (a `gone` lost with a gateway);
 * - when the caller may no longer read anything: its principal is resolved again on every
 *   heartbeat (a disabled user, a revoked key or session ends the stream with that error), and
 *   each event is checked against the principal of the moment;
 * - at shutdown, with `stream.unavailable` (the client reconnects to another replica).
 *
 * The heartbeat event (every HEARTBEAT_MS) also keeps the gateway's idle timeout from ending a
 * quiet tail.
 */

export const HEARTBEAT_MS = 30_000
/** Relays one service process runs at once; one more answers 503. */
export const MAX_RELAYS = 1_000

export interface EventsDeps {
  nc: NatsConnection
  js: JetStreamClient
  names: NatsNames
  db: Db
  resources: ResourceService
  log: Logger
  /** How long a departed client may take to resume (SSE_RECONNECT_WINDOW_SECONDS). */
  reconnectWindowMs: number
  heartbeatMs?: number
}

export interface EventRelays {
  start(p: Principal, caller: Caller | null, filter: string, channel: string): void
  /** Relays running now. */
  readonly size: number
  stopAll(): Promise<void>
}

interface Relay {
  stop(): void
  channel: string
}

const decoder = new TextDecoder()

export function eventRelays(d: EventsDeps): EventRelays {
  const relays = new Set<Relay>()
  const heartbeatMs = d.heartbeatMs ?? HEARTBEAT_MS

  const start = (principal: Principal, caller: Caller | null, filter: string, channel: string): void => {
    if (relays.size >= MAX_RELAYS)
      throw AppError.of('service.unavailable', 'too many event streams on this replica; retry shortly')
    const visibility = eventVisibility(d.resources)
    let p = principal
    let stopped = false
    const sub = d.nc.subscribe(d.names.subject(`events.execution.${filter}`))
    // one event after another, in the order NATS delivered them (a read check may wait on Postgres)
    const pump = async () => {
      for await (const msg of sub) {
        if (stopped) break
        let event: ExecutionEvent
        try {
          event = JSON.parse(decoder.decode(msg.data)) as ExecutionEvent
        } catch {
          continue
        }
        try {
          if (await visibility.visible(p, event))
            publishStreamEventNoAck(d.nc, d.names, channel, { event: 'execution', data: event })
        } catch (e) {
          d.log.warn({ err: e, channel }, 'execution event not relayed')
        }
      }
    }
    void pump()
    let watch: ListenerWatch | undefined
    const end = async (terminal?: { detail: string; code: string }) => {
      relay.stop()
      if (terminal !== undefined)
        await publishStreamEvent(d.js, d.names, channel, { event: 'error', data: terminal }).catch((e: unknown) =>
          d.log.warn({ err: e, channel }, 'event stream end not published'),
        )
    }
    const beat = async () => {
      if (stopped) return
      if (!(await hasListeners(d.nc, d.names, channel))) return void (await end())
      if (caller !== null) {
        try {
          p = await loadPrincipal(d.db, caller)
        } catch (e) {
          const body =
            e instanceof AppError
              ? e.toBody()
              : { detail: 'the caller could not be resolved', code: 'auth.unauthorized' }
          return void (await end({ detail: body.detail, code: body.code }))
        }
      }
      if (!stopped)
        publishStreamEventNoAck(d.nc, d.names, channel, { event: 'heartbeat', data: { at: new Date().toISOString() } })
    }
    const timer = setInterval(
      () => void beat().catch((e: unknown) => d.log.warn({ err: e, channel }, 'event stream heartbeat failed')),
      heartbeatMs,
    )
    timer.unref()
    const relay: Relay = {
      channel,
      stop() {
        if (stopped) return
        stopped = true
        clearInterval(timer)
        sub.unsubscribe()
        watch?.stop()
        relays.delete(relay)
      },
    }
    relays.add(relay)
    watch = watchListeners(d.nc, d.names, channel, d.reconnectWindowMs)
    watch.signal.addEventListener('abort', () => relay.stop())
  }

  return {
    start,
    get size() {
      return relays.size
    },
    async stopAll() {
      const all = [...relays]
      for (const r of all) r.stop()
      await Promise.all(
        all.map((r) =>
          publishStreamEvent(d.js, d.names, r.channel, {
            event: 'error',
            data: { detail: 'the service stopped; reconnect', code: 'stream.unavailable' },
          }).catch(() => undefined),
        ),
      )
    },
  }
}
