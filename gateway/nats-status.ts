import type { NatsConnection } from '@nats-io/transport-node'
import { unavailable as serviceUnavailable, type AppError } from '../src/kernel/errors.ts'
import type { Logger } from '../src/kernel/log.ts'

/*
 * The gateway's view of its NATS connection, kept from the client's status events. While the
 * connection is down nats.js buffers requests and lets them wait for their whole timeout (30 s),
 * so the gateway refuses new requests at once and rejects the ones in flight when the connection
 * drops: the client gets 503 `service.unavailable` and may retry, instead of 504 half a minute later.
 */
export type NatsLinkState = 'connected' | 'reconnecting' | 'closed'

export interface NatsLink {
  state(): NatsLinkState
  /** `p` unless the connection is down now or drops before `p` settles (then 503). */
  guard<T>(p: () => Promise<T>): Promise<T>
  /** Called when the connection drops or closes (what `guard` rejects, for callers keeping their own calls in flight). */
  onDrop(listener: () => void): void
}

const unavailable = (): AppError => serviceUnavailable('the platform lost its NATS connection; try again shortly')

export function trackNatsLink(nc: NatsConnection, log: Logger): NatsLink {
  let state: NatsLinkState = nc.isClosed() ? 'closed' : 'connected'
  const pending = new Set<(err: AppError) => void>()
  const listeners: (() => void)[] = []
  const dropped = () => {
    const rejects = [...pending]
    pending.clear()
    for (const reject of rejects) reject(unavailable())
    for (const listener of listeners) listener()
  }
  void (async () => {
    for await (const s of nc.status()) {
      const before: NatsLinkState = state
      if (s.type === 'disconnect' || s.type === 'reconnecting' || s.type === 'staleConnection') state = 'reconnecting'
      else if (s.type === 'reconnect') state = 'connected'
      else if (s.type === 'close') state = 'closed'
      if (state !== before) {
        log.warn({ nats: state, rejected: state === 'connected' ? 0 : pending.size }, 'gateway nats connection')
        if (state !== 'connected') dropped()
      }
    }
  })()
  void (async () => {
    await nc.closed()
    state = 'closed'
    dropped()
  })()
  return {
    state: () => state,
    onDrop: (listener) => listeners.push(listener),
    guard<T>(p: () => Promise<T>): Promise<T> {
      if (state !== 'connected') return Promise.reject(unavailable())
      return new Promise<T>((resolve, reject) => {
        pending.add(reject)
        p()
          .then(resolve, reject)
          .finally(() => pending.delete(reject))
      })
    },
  }
}
