import { Type as T } from '@sinclair/typebox'
import { enqueueJob, type EnqueueDeps } from '../src/jobs/enqueue.ts'
import { isTerminal, type JobStateStore } from '../src/jobs/job-state.ts'
import { defineActor } from './runtime/define-actor.ts'

/*
 * The chat actor: one per chat (key = chat id), so the messages of one chat are processed in the
 * order they were sent — a message that arrives while a turn runs waits in the actor's state and
 * starts when the turn ends. Each turn is an agent job whose id the sender chose (it waits on
 * it). The worker reports the end (`ended`); a watchdog timer covers a worker that died without
 * reporting (the job system marks such a job failed), so a chat never stays stuck.
 */
const Turn = T.Object({
  job_id: T.String({ format: 'uuid' }),
  content: T.Optional(T.String()),
  channel_id: T.Union([T.String(), T.Null()]),
  user_id: T.String(),
  approval: T.Optional(T.Object({ tool_call_id: T.String(), approved: T.Boolean() })),
  pool: T.Union([T.Literal('agent'), T.Literal('subagent')]),
  parent: T.Optional(T.Object({ id: T.String(), depth: T.Integer() })),
  delegation_depth: T.Optional(T.Integer({ minimum: 0 })),
  /** Continue a suspended turn (AGENT_DELEGATE_MODE=suspend): no new user message. */
  resume: T.Optional(T.Boolean()),
  /** A sub-agent turn of a suspended parent: where its reply goes when it ends. */
  resume_to: T.Optional(T.Object({ chat_id: T.String(), tool_call_id: T.String(), channel_id: T.Union([T.String(), T.Null()]), user_id: T.String() })),
})

export const ChatActorMessage = T.Union([
  T.Object({ type: T.Literal('send'), turn: Turn }, { additionalProperties: false }),
  T.Object({ type: T.Literal('ended'), job_id: T.String() }, { additionalProperties: false }),
])

export interface ChatActorState {
  running: { job_id: string; started_ms: number } | null
  queue: (typeof Turn)['static'][]
}

export function chatActor(d: { enqueue: EnqueueDeps; store: JobStateStore; agentTimeoutMs: number }) {
  const watchdogMs = d.agentTimeoutMs + 60_000

  type Ctx = { key: string; setTimer(name: string, ms: number): void }
  const start = async (ctx: Ctx, s: ChatActorState): Promise<ChatActorState> => {
    const chatId = ctx.key
    const next = s.queue[0]
    if (s.running !== null || next === undefined) return s
    await enqueueJob(d.enqueue, {
      id: next.job_id,
      pool: next.pool,
      kind: 'agent',
      namespace: 'chat',
      name: chatId,
      input: { chat_id: chatId, channel_id: next.channel_id, ...(next.content === undefined ? {} : { content: next.content }), ...(next.approval === undefined ? {} : { approval: next.approval }), ...(next.resume === true ? { resume: true } : {}) },
      userId: next.user_id,
      triggerType: 'chat',
      triggerId: chatId,
      chatId,
      parent: next.parent ?? null,
      meta: { delegation_depth: next.delegation_depth ?? 0, ...(next.resume_to === undefined ? {} : { resume_to: next.resume_to }) },
    })
    ctx.setTimer('watchdog', watchdogMs)
    return { running: { job_id: next.job_id, started_ms: Date.now() }, queue: s.queue.slice(1) }
  }

  return defineActor({
    type: 'chat',
    partitions: 64,
    message: ChatActorMessage,
    idleMs: 5 * 60_000,
    initialState: (): ChatActorState => ({ running: null, queue: [] }),
    async handle(ctx, msg) {
      if (msg.type === 'send') {
        if (ctx.state.queue.some((q) => q.job_id === msg.turn.job_id) || ctx.state.running?.job_id === msg.turn.job_id) return
        ctx.setState(await start(ctx, { ...ctx.state, queue: [...ctx.state.queue, msg.turn] }))
        return
      }
      if (ctx.state.running?.job_id !== msg.job_id) return
      ctx.clearTimer('watchdog')
      ctx.setState(await start(ctx, { ...ctx.state, running: null }))
    },
    async onTimer(ctx, name) {
      if (name !== 'watchdog' || ctx.state.running === null) return
      const cur = await d.store.get(ctx.state.running.job_id)
      if (cur !== null && !isTerminal(cur.state.status)) {
        ctx.setTimer('watchdog', 30_000)
        return
      }
      // ended without telling us (worker lost, or the job expired): go on with the next message
      ctx.setState(await start(ctx, { ...ctx.state, running: null }))
    },
  })
}
