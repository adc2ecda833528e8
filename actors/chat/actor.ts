import { enqueueJob, type EnqueueDeps } from '../../src/jobs/enqueue.ts'
import { isTerminal, openJobStateStore, type JobStateStore } from '../../src/jobs/job-state.ts'
import { maxDepthOf } from '../../src/jobs/start.ts'
import { defineActor, type Actor, type ActorContext, type ActorFactory } from '../runtime/define-actor.ts'
import { chatProtocol, type ChatTurn } from './protocol.ts'

/*
 * The chat actor: one per chat, so the messages of one chat are processed in the order they were
 * sent — a message that arrives while a turn runs waits in the actor's state and starts when the
 * turn ends. Each turn is an agent job whose id the sender chose (it waits on it). The worker
 * reports the end (`ended`); a watchdog timer covers a worker that died without reporting (the
 * job system marks such a job failed), so a chat never stays stuck.
 */
export interface ChatActorState {
  running: { job_id: string; started_ms: number } | null
  queue: ChatTurn[]
}

export interface ChatActorDeps {
  enqueue: EnqueueDeps
  store: JobStateStore
  agentTimeoutMs: number
}

export function chatActor(d: ChatActorDeps): Actor {
  const watchdogMs = d.agentTimeoutMs + 60_000

  /** Starts the next queued turn when none runs: its job is enqueued and the watchdog armed. */
  const startNext = async (ctx: ActorContext<ChatActorState, 'watchdog'>, s: ChatActorState): Promise<ChatActorState> => {
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
    protocol: chatProtocol,
    state: { initial: (): ChatActorState => ({ running: null, queue: [] }), idleMs: 5 * 60_000 },
    handlers: {
      async send(ctx, turn) {
        if (ctx.state.queue.some((q) => q.job_id === turn.job_id) || ctx.state.running?.job_id === turn.job_id) return
        ctx.setState(await startNext(ctx, { ...ctx.state, queue: [...ctx.state.queue, turn] }))
      },
      async ended(ctx, { job_id }) {
        if (ctx.state.running?.job_id !== job_id) return
        ctx.clearTimer('watchdog')
        ctx.setState(await startNext(ctx, { ...ctx.state, running: null }))
      },
    },
    timers: {
      async watchdog(ctx) {
        if (ctx.state.running === null) return
        const cur = await d.store.get(ctx.state.running.job_id)
        if (cur !== null && !isTerminal(cur.state.status)) {
          ctx.setTimer('watchdog', 30_000)
          return
        }
        // ended without telling us (worker lost, or the job expired): go on with the next message
        ctx.setState(await startNext(ctx, { ...ctx.state, running: null }))
      },
    },
  })
}

/** The chat actor of an actor host process. */
export const chatActorFactory: ActorFactory = async ({ nc, js, names, config }) => {
  const store = await openJobStateStore(nc, names)
  return chatActor({ enqueue: { js, names, store, maxDepth: maxDepthOf(config) }, store, agentTimeoutMs: config.AGENT_JOB_TIMEOUT * 1000 })
}
