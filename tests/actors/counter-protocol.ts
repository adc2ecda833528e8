import { Type as T } from '@sinclair/typebox'
import type { ActorProtocol } from '../../schemas/actor-protocol.ts'

/* The test actor's protocol: what the test process needs to send to hosts running in other processes. */
export const counterProtocol = {
  type: 'counter',
  partitions: 16,
  messages: {
    count: T.Object(
      { n: T.Integer({ minimum: 1 }), poison: T.Optional(T.Boolean()), arm: T.Optional(T.Boolean()) },
      { additionalProperties: false },
    ),
  },
} as const satisfies ActorProtocol
