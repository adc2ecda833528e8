import { Type as T } from '@sinclair/typebox'
import type { ActorProtocol } from '../../schemas/actor-protocol.ts'

/*
 * The schedule actor's protocol: one actor per schedule (key = schedule id). The resource service
 * sends `set` after a create or an update and `remove` after a delete; `version` is the schedule
 * row's version, so a message older than what the actor has seen (a redelivery) changes nothing.
 * Imports only typebox (the protocol type is erased), so any sender can import it.
 */
export const scheduleProtocol = {
  type: 'schedule',
  partitions: 32,
  messages: {
    set: T.Object(
      {
        version: T.Integer({ minimum: 1 }),
        cron_expression: T.String({ maxLength: 200 }),
        timezone: T.String({ maxLength: 64 }),
        active: T.Boolean(),
      },
      { additionalProperties: false },
    ),
    remove: T.Object({ version: T.Integer({ minimum: 1 }) }, { additionalProperties: false }),
  },
} as const satisfies ActorProtocol

/** The NATS request subject (below NATS_PREFIX) on which the resource service runs one tick. */
export const SCHEDULE_FIRE_SUBJECT = 'svc.schedules.fire'
