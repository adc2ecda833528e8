import { Type as T } from '@sinclair/typebox'
import { defineActor } from '../../actors/runtime/define-actor.ts'
import type { ActorProtocol } from '../../schemas/actor-protocol.ts'

/* The bench actor: 64 partitions; its state counts the messages of each key. */
export const tallyProtocol = {
  type: 'tally',
  partitions: 64,
  messages: { add: T.Object({ n: T.Integer() }) },
} as const satisfies ActorProtocol

export const tallyActor = defineActor({
  protocol: tallyProtocol,
  state: { initial: () => ({ count: 0 }) },
  handlers: {
    async add(ctx) {
      ctx.setState({ count: ctx.state.count + 1 })
    },
  },
})
