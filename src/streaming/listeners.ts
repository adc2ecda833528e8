import type { NatsConnection } from '@nats-io/transport-node'
import type { NatsNames } from '../platform/nats-names.ts'

/*
 * Who still listens to a stream channel: the signal that lets a turn stop paying for a provider
 * call nobody will read (the client-disconnect signal).
 *
 * - The gateway publishes `sse.gone.<channel>` (core NATS, no payload) when an HTTP client of the
 *   channel disconnects before the terminal event (gateway/sse.ts).
 * - Every gateway answers `sse.listeners.<channel>` requests with the number of clients it relays
 *   the channel to, and stays silent when it has none (so "no answer" means "nobody, anywhere").
 * - The worker running the turn (`watchListeners`) re-arms a reconnect window on each `gone`;
 *   when the window ends it asks who listens, and aborts its signal when nobody answers. A client
 *   that resumes within the window (Last-Event-ID) is found by that question and the turn goes on.
 *
 * Neither subject is stored by the SSE stream (it captures `sse.in.>` only).
 */
export const sseGoneSubject = (names: NatsNames, channelId: string): string => names.subject(`sse.gone.${channelId}`)
export const sseListenersSubject = (names: NatsNames, channelId: string): string =>
  names.subject(`sse.listeners.${channelId}`)
/** The gateways' one wildcard subscription for listener questions. */
export const sseListenersWildcard = (names: NatsNames): string => names.subject('sse.listeners.*')

/** How long a listener question waits for a gateway's answer. */
const PROBE_TIMEOUT_MS = 1_000

export interface ListenerWatch {
  /** Aborted once the channel had no listener for the reconnect window (reason: `ListenersGoneError`). */
  readonly signal: AbortSignal
  /** Stops watching (the turn ended). */
  stop(): void
}

export class ListenersGoneError extends Error {
  override name = 'ListenersGoneError'
  readonly code = 'chat.stream_abandoned'
}

/** Asks the gateways whether anyone listens to the channel; false when no gateway answers. */
export async function hasListeners(nc: NatsConnection, names: NatsNames, channelId: string): Promise<boolean> {
  try {
    await nc.request(sseListenersSubject(names, channelId), undefined, { timeout: PROBE_TIMEOUT_MS })
    return true
  } catch {
    // a timeout or "no responders": nobody relays this channel
    return false
  }
}

/** Watches a channel for its last listener leaving; see the header comment. */
export function watchListeners(
  nc: NatsConnection,
  names: NatsNames,
  channelId: string,
  reconnectWindowMs: number,
): ListenerWatch {
  const controller = new AbortController()
  let timer: NodeJS.Timeout | undefined
  let stopped = false
  const check = async () => {
    timer = undefined
    if (stopped || (await hasListeners(nc, names, channelId)) || stopped || timer !== undefined) return
    controller.abort(
      new ListenersGoneError(
        `no client listened to the stream for ${String(Math.round(reconnectWindowMs / 100) / 10)} s`,
      ),
    )
    stop()
  }
  const sub = nc.subscribe(sseGoneSubject(names, channelId), {
    callback: () => {
      if (stopped) return
      // Each departure re-arms the window: the check runs once it passed without a new departure.
      if (timer !== undefined) clearTimeout(timer)
      timer = setTimeout(() => void check(), reconnectWindowMs)
    },
  })
  const stop = () => {
    if (stopped) return
    stopped = true
    if (timer !== undefined) clearTimeout(timer)
    sub.unsubscribe()
  }
  return { signal: controller.signal, stop }
}
