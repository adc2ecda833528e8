import type { JetStreamClient } from '@nats-io/jetstream'
import { headers } from '@nats-io/transport-node'
import { Value } from '@sinclair/typebox/value'
import { invalid } from '../../src/kernel/errors.ts'
import type { NatsNames } from '../../src/platform/nats-names.ts'
import { publishDurably } from '../../src/platform/jetstream.ts'
import { KEY_PATTERN } from './define-actor.ts'
import { partitionOf } from './hash.ts'
import type { ActorProtocol, MessageName, MessagePayload } from '../../schemas/actor-protocol.ts'
import { checkerOf, encodeEnvelope } from './protocol.ts'

/** `actor.<type>.<partition>.<key>` on the work-queue stream ACTORS. */
export const mailboxSubject = (names: NatsNames, type: string, partition: number, key: string): string =>
  names.subject(`actor.${type}.${String(partition)}.${key}`)

/** Header of a message to a key its sender has just made (see `fresh` below). */
export const FRESH_KEY_HEADER = 'Actor-Fresh-Key'

/** Refuses (422) a key that is not subject-safe, a message name the protocol lacks, or a payload its schema does not accept. */
export function checkMessage(protocol: ActorProtocol, key: string, name: string, payload: unknown): void {
  if (!KEY_PATTERN.test(key))
    throw invalid(`actor key ${JSON.stringify(key)} is not subject-safe`, undefined, 'actor.bad_key')
  const schema = Object.hasOwn(protocol.messages, name) ? protocol.messages[name] : undefined
  if (schema === undefined)
    throw invalid(`${protocol.type} has no message ${JSON.stringify(name)}`, undefined, 'actor.unknown_message')
  if (!checkerOf(schema)(payload)) {
    const issues = [...Value.Errors(schema, payload)].slice(0, 10).map((e) => ({ path: e.path, message: e.message }))
    throw invalid(`invalid ${protocol.type} message ${name}`, issues, 'actor.invalid_message')
  }
}

/**
 * Sends the named message to an actor's mailbox; the sender needs only the protocol. Invalid
 * messages are refused here (422), before they can reach a host. `msgId` makes the send
 * idempotent within the stream's duplicate window (10 min). `fresh`: the key is one the sender
 * has just made (a new chat's id), so its host starts it from the initial state without reading
 * the state bucket (one round trip fewer before the handler runs). Should the key hold state after
 * all, the first state write's CAS fails, and the redelivered message is loaded the usual way.
 */
export async function sendToActor<P extends ActorProtocol, N extends MessageName<P>>(
  js: JetStreamClient,
  names: NatsNames,
  protocol: P,
  key: string,
  name: N,
  payload: MessagePayload<P, N>,
  opts: { msgId?: string; fresh?: boolean } = {},
): Promise<void> {
  checkMessage(protocol, key, name, payload)
  const subject = mailboxSubject(names, protocol.type, partitionOf(key, protocol.partitions), key)
  const h = opts.fresh === true ? headers() : undefined
  h?.set(FRESH_KEY_HEADER, '1')
  await publishDurably(js, subject, encodeEnvelope(name, payload), {
    msgID: opts.msgId ?? crypto.randomUUID(),
    ...(h === undefined ? {} : { headers: h }),
  })
}
