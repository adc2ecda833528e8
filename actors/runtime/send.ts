import type { JetStreamClient } from '@nats-io/jetstream'
import type { Static, TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { invalid } from '../../src/kernel/errors.ts'
import type { NatsNames } from '../../src/platform/nats-names.ts'
import { publishDurably } from '../../src/jobs/publish.ts'
import { KEY_PATTERN, type ActorDefinition } from './define-actor.ts'
import { partitionOf } from './hash.ts'

/** `actor.<type>.<partition>.<key>` on the work-queue stream ACTORS. */
export const mailboxSubject = (names: NatsNames, type: string, partition: number, key: string): string =>
  names.subject(`actor.${type}.${String(partition)}.${key}`)

/**
 * Sends a message to an actor's mailbox. Invalid messages are refused here, before they can reach
 * a host. `msgId` makes the send idempotent within the stream's duplicate window (10 min).
 */
export async function sendToActor<M extends TSchema, S>(
  js: JetStreamClient,
  names: NatsNames,
  def: ActorDefinition<M, S>,
  key: string,
  msg: Static<M>,
  opts: { msgId?: string } = {},
): Promise<void> {
  if (!KEY_PATTERN.test(key)) throw invalid(`actor key ${JSON.stringify(key)} is not subject-safe`, undefined, 'actor.bad_key')
  if (!Value.Check(def.message, msg)) {
    const issues = [...Value.Errors(def.message, msg)].slice(0, 10).map((e) => ({ path: e.path, message: e.message }))
    throw invalid(`invalid ${def.type} message`, issues, 'actor.invalid_message')
  }
  await publishDurably(js, mailboxSubject(names, def.type, partitionOf(key, def.partitions), key), JSON.stringify(msg), { msgID: opts.msgId ?? crypto.randomUUID() })
}
