import { Type as T } from '@sinclair/typebox'
import { defineActor } from '../../actors/runtime/define-actor.ts'

/* The bench actor: 64 partitions; its state counts the messages of each key. */
export const tallyActor = defineActor({
  type: 'tally',
  partitions: 64,
  message: T.Object({ n: T.Integer() }),
  initialState: () => ({ count: 0 }),
  async handle(ctx) {
    ctx.setState({ count: ctx.state.count + 1 })
  },
})
