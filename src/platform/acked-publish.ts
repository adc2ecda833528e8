import { JetStreamApiError, type PubAck } from '@nats-io/jetstream'
import { JetStreamClientImpl } from '@nats-io/jetstream/internal'
import type { JetStreamClient } from '@nats-io/jetstream'
import { createInbox, errors, headers as natsHeaders, type MsgHdrs, type Subscription } from '@nats-io/transport-node'
import type { NatsConnection } from './nats.ts'

/*
 * JetStream publishes that wait for their PubAck, without the JetStream client's request path.
 * `js.publish` (and `kv.create`/`kv.update`, which go through it) builds per call a request token,
 * a timer, a Promise.race, a header object through the option mapper and a fresh TextDecoder for
 * the answer: ~40 µs of CPU per publish on this VM, the largest item of a worker's or an actor
 * host's profile (bench/queue, bench/actors). Here a publish is one core publish whose reply
 * subject is `<inbox>.<n>` on one callback subscription of the publisher, matched by the counter,
 * with one sweep every 250 ms for answers overdue. What the server does is what it does for
 * `js.publish`: the same headers (`Nats-Msg-Id`, `Nats-Expected-Last-Subject-Sequence`), the same
 * PubAck or JetStream API error (a CAS conflict among them), and an empty 503 when no stream took
 * the subject.
 *
 * One publisher per connection is shared (`ackedPublisher(nc)`); the actor host builds its own
 * with a `send` that puts its publishes in the event-loop turn's one socket write (actors/runtime/outbox.ts).
 */
export interface AckedPublishOptions {
  /** `Nats-Msg-Id`: the stream drops a repeat within its duplicate window (`duplicate: true`). */
  msgID?: string
  /** `Nats-Expected-Last-Subject-Sequence`: a CAS on the subject (0: nothing stored on it yet). */
  expectedLastSubjectSequence?: number
  /** More headers; changed by the options above when both are given. */
  headers?: MsgHdrs
  /** Longest wait for this publish's PubAck (default: the publisher's). */
  timeoutMs?: number
}

export interface AckedPublisher {
  /**
   * Resolves with the PubAck; rejects with the server's JetStreamApiError, NoRespondersError (no
   * stream), ClosedConnectionError, or TimeoutError when no answer came within the timeout — the
   * message may then have been stored, so a retry needs a `msgID` or a CAS to stay single.
   */
  publish(subject: string, data: Uint8Array | string, opts?: AckedPublishOptions): Promise<PubAck>
  close(): void
}

interface Pending {
  resolve(ack: PubAck): void
  reject(err: unknown): void
  deadline: number
  subject: string
}

interface PubAckOrError extends Partial<PubAck> {
  error?: { code: number; err_code: number; description: string }
}

const decoder = new TextDecoder()
const EXPECTED_SEQ = 'Nats-Expected-Last-Subject-Sequence'

export interface AckedPublisherOptions {
  /** Longest wait for a PubAck (default 5 s, as `js.publish`). */
  timeoutMs?: number
  /** Hands each publish to the caller's batching (default: published at once). */
  send?: (publish: () => void) => void
}

export function createAckedPublisher(nc: NatsConnection, o: AckedPublisherOptions = {}): AckedPublisher {
  const timeoutMs = o.timeoutMs ?? 5_000
  const send = o.send ?? ((publish: () => void) => publish())
  const inbox = createInbox()
  const pending = new Map<number, Pending>()
  let next = 0
  const answer = (id: number, data: Uint8Array): void => {
    const p = pending.get(id)
    if (p === undefined) return // answered after its timeout
    pending.delete(id)
    // an empty reply (status 503): no stream took the subject, or JetStream is restarting
    if (data.length === 0) {
      p.reject(new errors.NoRespondersError(p.subject))
      return
    }
    let r: PubAckOrError
    try {
      r = JSON.parse(decoder.decode(data)) as PubAckOrError
    } catch (err) {
      p.reject(err)
      return
    }
    if (r.error !== undefined) p.reject(new JetStreamApiError(r.error))
    else if (typeof r.seq === 'number' && typeof r.stream === 'string')
      p.resolve({
        stream: r.stream,
        seq: r.seq,
        duplicate: r.duplicate === true,
        ...(r.domain === undefined ? {} : { domain: r.domain }),
      })
    else p.reject(new Error('JetStream answered a publish without a sequence'))
  }
  const sub: Subscription = nc.subscribe(`${inbox}.*`, {
    callback: (err, msg) => {
      if (err === null) answer(Number(msg.subject.slice(inbox.length + 1)), msg.data)
    },
  })
  const sweep = setInterval(
    () => {
      const now = performance.now()
      for (const [id, p] of pending) {
        if (p.deadline > now) continue
        pending.delete(id)
        p.reject(new errors.TimeoutError())
      }
    },
    Math.min(250, timeoutMs),
  )
  sweep.unref()
  return {
    publish(subject, data, opts) {
      const id = next++
      let h = opts?.headers
      if (opts?.msgID !== undefined || opts?.expectedLastSubjectSequence !== undefined) {
        h ??= natsHeaders()
        if (opts.msgID !== undefined) h.set('Nats-Msg-Id', opts.msgID)
        if (opts.expectedLastSubjectSequence !== undefined)
          h.set(EXPECTED_SEQ, String(opts.expectedLastSubjectSequence))
      }
      return new Promise<PubAck>((resolve, reject) => {
        pending.set(id, { resolve, reject, deadline: performance.now() + (opts?.timeoutMs ?? timeoutMs), subject })
        send(() => {
          try {
            nc.publish(subject, data, { reply: `${inbox}.${String(id)}`, ...(h === undefined ? {} : { headers: h }) })
          } catch (err) {
            pending.delete(id)
            reject(err)
          }
        })
      })
    },
    close() {
      clearInterval(sweep)
      sub.unsubscribe()
      for (const p of pending.values()) p.reject(new errors.ClosedConnectionError())
      pending.clear()
    },
  }
}

const shared = new WeakMap<NatsConnection, AckedPublisher>()

/** The connection's shared publisher (made on first use; it lives as long as the connection). */
export function ackedPublisher(nc: NatsConnection): AckedPublisher {
  let p = shared.get(nc)
  if (p === undefined) {
    p = createAckedPublisher(nc)
    shared.set(nc, p)
    void nc.closed().then(() => p?.close())
  }
  return p
}

/**
 * The shared publisher of a JetStream client's connection; for a client of another make, its own
 * `js.publish` behind the same interface.
 */
export function ackedPublisherOf(js: JetStreamClient): AckedPublisher {
  if (js instanceof JetStreamClientImpl) return ackedPublisher(js.nc)
  return {
    publish: (subject, data, o) =>
      js.publish(subject, data, {
        ...(o?.msgID === undefined ? {} : { msgID: o.msgID }),
        ...(o?.headers === undefined ? {} : { headers: o.headers }),
        ...(o?.expectedLastSubjectSequence === undefined
          ? {}
          : { expect: { lastSubjectSequence: o.expectedLastSubjectSequence } }),
        ...(o?.timeoutMs === undefined ? {} : { timeout: o.timeoutMs }),
      }),
    close: () => undefined,
  }
}

/**
 * CAS writes on a KV bucket's keys through a publisher: what `kv.create` (`expected` 0: nothing
 * stored on the key yet) and `kv.update` send, resolving with the new revision; a stale revision
 * is the server's CAS conflict (`isWrongLastSequence`). Keys are the caller's to keep valid.
 */
export function kvCasWriter(
  p: AckedPublisher,
  bucket: string,
): (key: string, data: Uint8Array | string, expected: number) => Promise<number> {
  const prefix = `$KV.${bucket}.`
  return async (key, data, expected) =>
    (await p.publish(prefix + key, data, { expectedLastSubjectSequence: expected })).seq
}
