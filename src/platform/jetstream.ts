import { JetStreamApiError, type JetStreamClient, type PubAck } from '@nats-io/jetstream'
import type { Bucket, KV } from '@nats-io/kv'
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

/**
 * The keys of a KV bucket matching `filter` that hold a stored last message, read from the stream's
 * per-subject counts: one request, no consumer. nats.js's `kv.keys()` creates an ordered consumer
 * and ends on a message with nothing pending after it; an entry that expires between the
 * consumer's creation and its delivery (a bucket with a TTL: heartbeats, leases) never arrives,
 * and the listing then waited for an idle heartbeat that nats-server 2.9 did not send (one
 * listing hung for good in each of two runs of 200 listings of a bucket whose entries expired;
 * none in 200 on 2.15). A deleted key's marker is a stored message too: callers read each entry
 * and skip what is not a PUT, as they do anyway.
 */
export async function kvKeys(kv: KV, filter = '>'): Promise<string[]> {
  const b = kv as Bucket
  const info = await b.jsm.streams.info(b.stream, { subjects_filter: b.fullKeyName(filter) })
  return Object.keys(info.state.subjects ?? {}).map((subject) => subject.slice(b.prefixLen))
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
