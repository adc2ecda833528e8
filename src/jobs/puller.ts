import { createInbox, type Msg, type MsgHdrs, type Subscription } from '@nats-io/transport-node'
import type { Logger } from '../kernel/log.ts'
import type { NatsConnection } from '../platform/nats.ts'

/*
 * A lean pull client for one durable consumer, sized to the worker's slots. nats.js `next()`
 * creates an inbox subscription, timers and an iterator per message; `consume()` pre-buffers
 * messages whose ack_wait then runs down while they wait. Here one inbox
 * subscription serves every slot, and there is exactly one outstanding pull request (batch 1) per
 * free slot, so `ack_pending` never exceeds the slots that are executing.
 *
 * Replies to a pull: a message (its reply subject is the `$JS.ACK…` subject that acks it), or a
 * status message without reply (408 request expired, 409 consumer state changed) that ends one
 * request. Requests the server lost (a restart) are expired locally after `expires` + grace.
 */
export interface PulledMessage {
  subject: string
  data: Uint8Array
  headers: MsgHdrs | undefined
  /** Times the server has delivered this message (naks and redeliveries count). */
  deliveryCount: number
  ack(): void
  /** Redeliver after `delayMs` (0 = at once). */
  nak(delayMs?: number): void
  /** Never redeliver. On 2.9 the reason form (`+TERM reason`) is a no-op, so none is sent. */
  term(): void
  /** Resets ack_wait: the job is still being worked on. */
  working(): void
}

export interface Puller {
  /** The next message for a free slot; null once closed. */
  take(): Promise<PulledMessage | null>
  close(): void
}

const EXPIRES_MS = 5_000
const GRACE_MS = 3_000
const encoder = new TextEncoder()

export function startPuller(o: {
  nc: NatsConnection
  stream: string
  consumer: string
  slots: number
  apiPrefix?: string
  log: Logger
}): Puller {
  const inbox = createInbox()
  const nextSubject = `${o.apiPrefix ?? '$JS.API'}.CONSUMER.MSG.NEXT.${o.stream}.${o.consumer}`
  const request = encoder.encode(JSON.stringify({ batch: 1, expires: EXPIRES_MS * 1e6 }))
  /** Local deadlines of outstanding pull requests, oldest first. */
  const outstanding: number[] = []
  const waiters: ((m: PulledMessage | null) => void)[] = []
  let closed = false

  const pull = () => {
    // One request per waiting slot; a slot that is executing has none.
    if (closed) return
    while (outstanding.length < waiters.length && !o.nc.isClosed()) {
      outstanding.push(Date.now() + EXPIRES_MS + GRACE_MS)
      try {
        o.nc.publish(nextSubject, request, { reply: inbox })
      } catch (err) {
        outstanding.pop()
        o.log.debug({ err }, 'pull request not sent')
        return
      }
    }
  }

  const sub: Subscription = o.nc.subscribe(inbox, {
    callback: (err, msg) => {
      if (err !== null) return
      outstanding.shift()
      if (msg.reply === undefined || msg.reply === '' || !msg.reply.startsWith('$JS.ACK.')) {
        // A status (408 expired, 409 …): that request is over; ask again.
        pull()
        return
      }
      const waiter = waiters.shift()
      if (waiter === undefined) {
        // Nobody waits (closing): hand it back at once.
        o.nc.publish(msg.reply, encoder.encode('-NAK'))
        return
      }
      waiter(toPulled(o.nc, msg))
      pull()
    },
  })

  // Requests lost with a server restart never answer: forget them after their deadline.
  const sweeper = setInterval(() => {
    const now = Date.now()
    let dropped = false
    while (outstanding.length > 0 && (outstanding[0] as number) < now) {
      outstanding.shift()
      dropped = true
    }
    if (dropped) pull()
  }, 1_000)
  sweeper.unref()
  void (async () => {
    for await (const s of o.nc.status()) {
      if (s.type === 'reconnect') {
        outstanding.length = 0
        pull()
      }
    }
  })().catch(() => undefined)

  return {
    take() {
      if (closed) return Promise.resolve(null)
      return new Promise((resolve) => {
        waiters.push(resolve)
        pull()
      })
    },
    close() {
      closed = true
      clearInterval(sweeper)
      for (const w of waiters.splice(0)) w(null)
      sub.unsubscribe()
    },
  }
}

function toPulled(nc: NatsConnection, msg: Msg): PulledMessage {
  const reply = msg.reply as string
  // $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending> (2.9), or with
  // <domain>.<account hash> after ACK and a trailing random token (2.10+).
  const t = reply.split('.')
  const delivered = Number(t.length === 9 ? t[4] : t[6])
  const send = (body: string) => nc.publish(reply, encoder.encode(body))
  return {
    subject: msg.subject,
    data: msg.data,
    headers: msg.headers,
    deliveryCount: Number.isFinite(delivered) ? delivered : 1,
    ack: () => send('+ACK'),
    nak: (delayMs = 0) => send(delayMs > 0 ? `-NAK ${JSON.stringify({ delay: Math.round(delayMs * 1e6) })}` : '-NAK'),
    term: () => send('+TERM'),
    working: () => send('+WPI'),
  }
}
