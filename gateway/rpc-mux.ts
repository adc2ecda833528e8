import {
  createInbox,
  errors as natsErrors,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type Subscription,
} from '@nats-io/transport-node'

/*
 * The gateway's request/reply to the services over NATS, without nats.js's `request`. Per call
 * `nc.request` builds a request object, a token from nuid, a timer (a setTimeout and its promise),
 * a Promise.race and a catch handler, and the gateway's NATS link guard added three more promises
 * and a Set entry: the bookkeeping was a visible part of a ROLES=gateway process's CPU per
 * forwarded request (bench/gateway.bench.ts, the ROLES=gateway rows). Here a call is one core
 * publish whose reply subject is `<inbox>.<n>` on one callback subscription, matched by a counter,
 * one promise per call, and one sweep for overdue answers (the timeout is the same for every call,
 * so the pending map, in insertion order, is in deadline order: the sweep stops at the first call
 * still in time). The inbox uses the connection's own prefix (a user's `_INBOX_<user>` in the
 * platform's NATS security). An empty reply with status 503 is the server's "no responders".
 * `failAll` rejects every call in flight (the connection dropped: gateway/nats-status.ts).
 * The same pattern as src/platform/acked-publish.ts (PubAcks).
 */
interface Pending {
  resolve(msg: Msg): void
  reject(err: unknown): void
  deadline: number
}

export interface RpcMuxErrors {
  /** No answer within the timeout. */
  timeout(): Error
  /** The server said no service subscribes to the subject. */
  noResponders(): Error
}

export class RpcMux {
  private readonly nc: NatsConnection
  private readonly timeoutMs: number
  private readonly errors: RpcMuxErrors
  private readonly pending = new Map<number, Pending>()
  private inbox = ''
  private sub: Subscription | undefined
  private sweeper: NodeJS.Timeout | undefined
  private next = 0

  constructor(nc: NatsConnection, timeoutMs: number, errors: RpcMuxErrors) {
    this.nc = nc
    this.timeoutMs = timeoutMs
    this.errors = errors
  }

  /** Publishes the request and resolves with the reply message. */
  request(subject: string, data: Uint8Array, headers: MsgHdrs): Promise<Msg> {
    if (this.sub === undefined) this.listen()
    const id = this.next++
    return new Promise<Msg>((resolve, reject) => {
      this.pending.set(id, { resolve, reject, deadline: performance.now() + this.timeoutMs })
      try {
        this.nc.publish(subject, data, { reply: `${this.inbox}${String(id)}`, headers })
      } catch (err) {
        this.pending.delete(id)
        reject(err)
      }
    })
  }

  /** Rejects every call in flight with `err()` (each its own error). */
  failAll(err: () => Error): void {
    if (this.pending.size === 0) return
    const all = [...this.pending.values()]
    this.pending.clear()
    for (const p of all) p.reject(err())
  }

  get inFlight(): number {
    return this.pending.size
  }

  private listen(): void {
    const prefix = (this.nc as unknown as { options?: { inboxPrefix?: string } }).options?.inboxPrefix
    this.inbox = `${createInbox(prefix)}.`
    const skip = this.inbox.length
    this.sub = this.nc.subscribe(`${this.inbox}*`, {
      callback: (err, msg) => {
        if (err !== null) {
          // the subscription itself failed (a permission violation on the inbox): nothing will answer
          this.failAll(() => err)
          return
        }
        const id = Number(msg.subject.slice(skip))
        const p = this.pending.get(id)
        if (p === undefined) return // answered after its timeout
        this.pending.delete(id)
        if (msg.data.length === 0 && msg.headers?.code === 503) p.reject(this.errors.noResponders())
        else p.resolve(msg)
      },
    })
    void this.nc.closed().then(() => this.close())
    this.sweeper = setInterval(() => this.sweep(), Math.max(10, Math.min(250, this.timeoutMs / 4)))
    this.sweeper.unref()
  }

  private sweep(): void {
    const now = performance.now()
    for (const [id, p] of this.pending) {
      if (p.deadline > now) break
      this.pending.delete(id)
      p.reject(this.errors.timeout())
    }
  }

  private close(): void {
    clearInterval(this.sweeper)
    this.failAll(() => new natsErrors.ClosedConnectionError())
  }
}
