import type { Delivery } from './partition.ts'

/*
 * A host's outgoing acks and state writes, sent together once per event-loop turn. nats.js flushes
 * its outbound buffer in a microtask after the first command; a host's acks and writes come out of
 * different promise chains (one per key), each resolving in a later microtask than the flush, so
 * every one of them was a socket write of its own — the largest single item of a host's CPU profile
 * under load (bench/actors). Deferring them to setImmediate (after every message and reply of the
 * socket chunk being read has been handled) puts them in one write. Nothing waits longer than the
 * current turn of the event loop.
 */
export interface Outbox {
  ack(m: Delivery): void
  /** Runs `send` (a publish) with the others of this turn. */
  later(send: () => void): void
  /** Resolves once what is queued now has been handed to the connection (in order before anything published after). */
  flushed(): Promise<void>
}

/**
 * `onError` hears a send or an ack that threw (a connection closing under it). Each one is tried on
 * its own and the waiters are always released: one throwing publish once left `flushed()` pending
 * forever, and with it the tick chain of the host that awaited it (no lease renewed or acquired).
 * What threw is not lost: an unsent write fails its caller's acked publish by timeout, an unsent
 * ack is redelivered after the ack wait.
 */
export function outbox(onError: (err: unknown) => void = () => undefined): Outbox {
  let acks: Delivery[] = []
  let sends: Array<() => void> = []
  let scheduled = false
  let waiters: Array<() => void> = []
  const attempt = (fn: () => void): void => {
    try {
      fn()
    } catch (err) {
      onError(err)
    }
  }
  const flush = (): void => {
    scheduled = false
    const a = acks
    const s = sends
    const w = waiters
    acks = []
    sends = []
    waiters = []
    for (const send of s) attempt(send)
    for (const m of a) attempt(() => m.ack())
    for (const resolve of w) resolve()
  }
  const schedule = (): void => {
    if (scheduled) return
    scheduled = true
    setImmediate(flush)
  }
  return {
    ack(m) {
      acks.push(m)
      schedule()
    },
    later(send) {
      sends.push(send)
      schedule()
    },
    flushed() {
      if (!scheduled) return Promise.resolve()
      return new Promise((resolve) => waiters.push(resolve))
    },
  }
}
