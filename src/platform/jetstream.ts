import { JetStreamApiError, type JetStreamClient, type PubAck } from '@nats-io/jetstream'
import type { MsgHdrs } from '@nats-io/transport-node'
import { ackedPublisherOf } from './acked-publish.ts'
import { unavailable } from '../kernel/errors.ts'

/*
 * The JetStream and KV helpers that jobs, actors and rate limits share. Errors are classified by
 * the client's own error classes and the server's api error codes, never by message text.
 */

/**
 * The server's answer to a CAS write with a stale revision ("wrong last sequence", 10071; 10164
 * when the server could not tell the last sequence): someone else wrote first. Re-read and judge.
 * One check for the whole platform: src/kernel/nats-errors.ts `isCasConflict`.
 */
export { isCasConflict as isWrongLastSequence } from '../kernel/nats-errors.ts'

/** A JetStream API 404 (no such consumer or stream). */
export function isApiNotFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.status === 404
}

/*
 * A JetStream publish that survives a NATS restart: a PubAck that times out is ambiguous (the
 * message may be stored), so the same publish is retried with the same `Nats-Msg-Id` and the
 * stream's duplicate window makes the retry harmless (verified through a SIGKILL of
 * the server). Gives up after `budgetMs` with a 503: the caller's request was then not accepted.
 */
export async function publishDurably(
  js: JetStreamClient,
  subject: string,
  data: Uint8Array | string,
  opts: { msgID: string; headers?: MsgHdrs },
  budgetMs = 15_000,
): Promise<PubAck> {
  const deadline = Date.now() + budgetMs
  // the connection's lean publisher (acked-publish.ts)
  const publisher = ackedPublisherOf(js)
  let delay = 100
  for (;;) {
    try {
      return await publisher.publish(subject, data, { ...opts, timeoutMs: 2_000 })
    } catch (err) {
      if (Date.now() + delay > deadline)
        throw unavailable(`the queue did not accept the message: ${String(err)}`, 'queue.unavailable')
      await new Promise((r) => setTimeout(r, delay))
      delay = Math.min(delay * 2, 2_000)
    }
  }
}
