import { JetStreamApiError } from '@nats-io/jetstream'
import { createInbox, errors, headers, type Subscription } from '@nats-io/transport-node'
import type { NatsConnection } from '../../src/platform/nats.ts'
import type { Outbox } from './outbox.ts'

/*
 * CAS writes of actor state without the KV client. `kv.update` goes through js.publish → request:
 * per write a request token, a timer, a Promise.race, a header object built through the
 * JetStream option mapper and a fresh TextDecoder for the PubAck — measured at ~40 µs of host CPU
 * per write (bench/actors: most of a host's CPU per message). Here every write is one core
 * publish on the KV subject with `Nats-Expected-Last-Subject-Sequence`, its reply on one
 * callback subscription of the writer, matched by a counter, and one sweep a second for writes
 * unanswered past the timeout. What the server does is the same as for `kv.update`/`kv.create`:
 * expected revision 0 means "no message on this key yet" (a create), and a stale revision is
 * refused with the same JetStream error (`isWrongLastSequence`).
 */
export interface StateWriter {
  /**
   * Writes `data` at `$KV.<bucket>.<key>` if the key's last revision is `expected` (0: the key
   * holds nothing yet); resolves with the new revision. Rejects with the server's JetStreamApiError
   * (a CAS conflict among them), or a TimeoutError when no answer came within the timeout — then
   * the write may or may not have landed, so the caller must re-read before writing again.
   */
  write(key: string, data: Uint8Array | string, expected: number): Promise<number>
  close(): void
}

interface Pending {
  resolve(rev: number): void
  reject(err: unknown): void
  at: number
}

interface PubAckOrError {
  seq?: number
  error?: { code: number; err_code: number; description: string }
}

const decoder = new TextDecoder()

export function stateWriter(nc: NatsConnection, bucket: string, out: Outbox, timeoutMs = 5_000): StateWriter {
  const inbox = createInbox()
  const pending = new Map<number, Pending>()
  let next = 0
  const settle = (id: number, data: Uint8Array): void => {
    const p = pending.get(id)
    if (p === undefined) return // answered after its timeout
    pending.delete(id)
    let r: PubAckOrError
    try {
      r = JSON.parse(decoder.decode(data)) as PubAckOrError
    } catch (err) {
      p.reject(err)
      return
    }
    if (r.error !== undefined) p.reject(new JetStreamApiError(r.error))
    else if (typeof r.seq === 'number') p.resolve(r.seq)
    else p.reject(new Error('state write: no sequence in the PubAck'))
  }
  const sub: Subscription = nc.subscribe(`${inbox}.*`, {
    callback: (err, msg) => {
      if (err !== null) return
      const id = Number(msg.subject.slice(inbox.length + 1))
      // an empty reply with status 503: no JetStream answered (stream missing, server restarting)
      if (msg.data.length === 0) {
        const p = pending.get(id)
        pending.delete(id)
        p?.reject(new errors.NoRespondersError(msg.subject))
        return
      }
      settle(id, msg.data)
    },
  })
  const sweep = setInterval(() => {
    const cutoff = performance.now() - timeoutMs
    for (const [id, p] of pending) {
      // ids are issued in time order: the first recent one ends the sweep
      if (p.at > cutoff) break
      pending.delete(id)
      p.reject(new errors.TimeoutError())
    }
  }, Math.min(1_000, timeoutMs))
  sweep.unref()
  const prefix = `$KV.${bucket}.`
  return {
    write(key, data, expected) {
      const id = next++
      const h = headers()
      h.set('Nats-Expected-Last-Subject-Sequence', String(expected))
      return new Promise<number>((resolve, reject) => {
        pending.set(id, { resolve, reject, at: performance.now() })
        // sent with the other writes and acks of this event-loop turn (outbox.ts)
        out.later(() => {
          try {
            nc.publish(prefix + key, data, { reply: `${inbox}.${String(id)}`, headers: h })
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
