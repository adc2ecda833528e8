import { Type as T } from '@sinclair/typebox'
import type { ActorProtocol } from '../../schemas/actor-protocol.ts'

/*
 * The db-trigger actor's protocol: one actor per database trigger (key = trigger id). The resource
 * service sends `set` after a create or an update and `remove` after a delete; `version` is the
 * trigger row's version, so a message older than what the actor has seen changes nothing; a newer
 * `set` makes the actor poll at once (a first activation sets the bookmark then).
 * Imports only typebox (the protocol type is erased), so any sender can import it.
 */
export const dbTriggerProtocol = {
  type: 'db-trigger',
  partitions: 32,
  messages: {
    set: T.Object(
      {
        version: T.Integer({ minimum: 1 }),
        active: T.Boolean(),
        poll_interval_seconds: T.Integer({ minimum: 1, maximum: 3600 }),
      },
      { additionalProperties: false },
    ),
    remove: T.Object({ version: T.Integer({ minimum: 1 }) }, { additionalProperties: false }),
  },
} as const satisfies ActorProtocol

/** The NATS request subject (below NATS_PREFIX) on which the resource service runs one poll. */
export const DB_TRIGGER_POLL_SUBJECT = 'svc.dbtriggers.poll'
