import { createAckedPublisher, kvCasWriter } from '../../src/platform/acked-publish.ts'
import type { NatsConnection } from '../../src/platform/nats.ts'
import type { Outbox } from './outbox.ts'

/*
 * CAS writes of actor state (and leases) without the KV client: one core publish on the KV subject
 * with `Nats-Expected-Last-Subject-Sequence` through a lean publisher (src/platform/acked-publish.ts),
 * sent with the host's other writes and acks of the event-loop turn (outbox.ts). What the server
 * does is the same as for `kv.update`/`kv.create`: expected revision 0 means "no message on this
 * key yet" (a create), and a stale revision is refused with the same JetStream error
 * (`isWrongLastSequence`).
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

export function stateWriter(nc: NatsConnection, bucket: string, out: Outbox, timeoutMs = 5_000): StateWriter {
  const publisher = createAckedPublisher(nc, { timeoutMs, send: (publish) => out.later(publish) })
  return { write: kvCasWriter(publisher, bucket), close: () => publisher.close() }
}
