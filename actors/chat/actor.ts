import { enqueueJob, prepareJob, type EnqueueDeps, type EnqueueRequest } from '../../src/jobs/enqueue.ts'
import { isTerminal, jobError, openJobStateStore, type JobState, type JobStateStore } from '../../src/jobs/job-state.ts'
import { runsOnWorker } from '../../src/jobs/job-liveness.ts'
import { workersBucket } from '../../src/platform/heartbeat.ts'
import type { LocalJobs, LocalStart } from '../../src/jobs/local-run.ts'
import { maxDepthOf } from '../../src/jobs/start.ts'
import { startSpan, tracing, type TraceSpan } from '../../src/platform/tracing.ts'
import { defineActor, type Actor, type ActorContext, type ActorFactory } from '../runtime/define-actor.ts'
import { announceLostTurn } from './lost-turn.ts'
import { chatProtocol, type ChatRunningTurn, type ChatTurn } from '../protocols/chat.ts'

/*
 * The chat actor: one per chat, so the messages of one chat are processed in the order they were
 * sent — a message that arrives while a turn runs waits in the actor's state and starts when the
 * turn ends. Each turn is an agent job whose id the sender chose (it waits on it). The worker
 * reports the end (`ended`); a watchdog timer covers a worker that died without reporting (the
 * job system marks such a job failed), so a chat never stays stuck.
 *
 * When this host process runs agent workers too (ROLES=all, or actors with workers), the turn's
 * job starts in one of them directly (src/jobs/local-run.ts): claimed by the same CAS, without the
 * JOBS publish and pull; only when none has a free slot does it go through the queue.
 */
export interface ChatActorState {
  /** The turn running now (its shape is the protocol's: the chat owner's cancel reads it from outside). */
  running: ChatRunningTurn | null
  queue: ChatTurn[]
  /**
   * chats.message_count as the last turn left it, while nothing else may have written the chat
   * since: handed to the next turn, whose worker then needs no read when it holds that many
   * (src/chats/history-cache.ts). Absent when unknown: a turn that did not report it (suspended
   * for sub-agents, lost, a write of unknown outcome) or a sub-agent's answer written from outside.
   */
  message_count?: number
}

/** The state without a vouched message count. */
const unknownCount = ({ message_count: _count, ...s }: ChatActorState): ChatActorState => s

export interface ChatActorDeps {
  enqueue: EnqueueDeps
  store: JobStateStore
  agentTimeoutMs: number
  /** The agent workers of this process, when it has any. */
  local?: LocalJobs
  /**
   * With workers in this process: how often the watchdog looks at a running turn's job
   * (QUEUE_ACK_WAIT_SECONDS, when a pulled job of a dead worker would come back); for turns started
   * locally, whether its worker still runs it and how a lost one's stream is ended.
   */
  localCheck?: { everyMs: number; runs(job: JobState): Promise<boolean>; announceLost(job: JobState): Promise<void> }
}

export function chatActor(d: ChatActorDeps): Actor {
  const watchdogMs = d.agentTimeoutMs + 60_000

  /** Starts the next queued turn when none runs: its job is started (here, or through the queue) and the watchdog armed. */
  const startNext = async (
    ctx: ActorContext<ChatActorState, 'watchdog'>,
    s: ChatActorState,
  ): Promise<ChatActorState> => {
    const chatId = ctx.key
    let cur = s
    for (;;) {
      const next = cur.queue[0]
      if (cur.running !== null || next === undefined) return cur
      // the turn's span (tracing on): a child of the sender's, the parent of its job's run
      const span: TraceSpan | undefined = tracing.on
        ? startSpan('chat.turn', {
            parent: next.traceparent,
            attributes: { 'chat.id': chatId, 'job.id': next.job_id, 'job.pool': next.pool },
          })
        : undefined
      const req: EnqueueRequest = {
        id: next.job_id,
        pool: next.pool,
        kind: 'agent',
        namespace: 'chat',
        name: chatId,
        input: {
          chat_id: chatId,
          channel_id: next.channel_id,
          ...(next.content === undefined ? {} : { content: next.content }),
          ...(next.approval === undefined ? {} : { approval: next.approval }),
          ...(next.resume === true ? { resume: true } : {}),
          ...(cur.message_count === undefined ? {} : { message_count: cur.message_count }),
        },
        userId: next.user_id,
        triggerType: 'chat',
        triggerId: chatId,
        chatId,
        parent: next.parent ?? null,
        meta: {
          delegation_depth: next.delegation_depth ?? 0,
          ...(next.resume_to === undefined ? {} : { resume_to: next.resume_to }),
        },
        ...(span === undefined ? {} : { traceparent: span.traceparent }),
      }
      let started: LocalStart | 'full'
      try {
        started = d.local === undefined ? 'full' : await d.local.start(prepareJob(d.enqueue, req))
        span?.setAttribute('job.started', started)
        // over already (a redelivered message whose turn ran): nothing to wait for, on to the next
        if (started === 'full') await enqueueJob(d.enqueue, req)
      } catch (err) {
        span?.fail(err)
        throw err
      } finally {
        span?.end()
      }
      if (started === 'over') {
        cur = unknownCount({ ...cur, queue: cur.queue.slice(1) })
        continue
      }
      const local = started !== 'full' && d.localCheck !== undefined
      // With workers in this process, a turn's end is told to this host in-process when its worker
      // is here (actors/runtime/tell.ts) and lost if the process dies before the state is written:
      // the watchdog looks at every turn's job that often, not only at the local ones'.
      ctx.setTimer('watchdog', d.localCheck?.everyMs ?? watchdogMs)
      return {
        ...cur,
        running: { job_id: next.job_id, started_ms: Date.now(), ...(local ? { local: true } : {}) },
        queue: cur.queue.slice(1),
      }
    }
  }

  return defineActor({
    protocol: chatProtocol,
    state: { initial: (): ChatActorState => ({ running: null, queue: [] }), idleMs: 5 * 60_000 },
    handlers: {
      async send(ctx, turn) {
        if (ctx.state.queue.some((q) => q.job_id === turn.job_id) || ctx.state.running?.job_id === turn.job_id) return
        // a resume follows a sub-agent's answer written into the chat from outside any turn
        const s = turn.resume === true ? unknownCount(ctx.state) : ctx.state
        ctx.setState(await startNext(ctx, { ...s, queue: [...s.queue, turn] }))
      },
      async ended(ctx, { job_id, message_count }) {
        if (ctx.state.running?.job_id !== job_id) return
        ctx.clearTimer('watchdog')
        const s = unknownCount(ctx.state)
        // a resume waiting means a sub-agent's answer was written while this turn ran, maybe after its write
        const vouched = message_count !== undefined && !s.queue.some((q) => q.resume === true)
        ctx.setState(await startNext(ctx, { ...s, running: null, ...(vouched ? { message_count } : {}) }))
      },
    },
    timers: {
      async watchdog(ctx) {
        const running = ctx.state.running
        if (running === null) return
        const cur = await d.store.get(running.job_id)
        if (cur !== null && !isTerminal(cur.state.status)) {
          const check = running.local === true ? d.localCheck : undefined
          // A local turn has no queue message that would bring it back to a live worker when
          // its own died: the watchdog finds it, fails it and ends its stream, as a pull would.
          const lost = check !== undefined && cur.state.status === 'running' && !(await check.runs(cur.state))
          const failed = lost
            ? await d.store.transition(
                running.job_id,
                (s) =>
                  s.status === 'running' && s.worker === cur.state.worker && s.attempts === cur.state.attempts
                    ? {
                        ...s,
                        status: 'failed',
                        error: jobError('job.worker_lost', 'worker lost during the run; agent jobs are not retried'),
                        finished_at: new Date().toISOString(),
                      }
                    : null,
                cur,
              )
            : null
          if (failed === null) {
            ctx.setTimer('watchdog', d.localCheck?.everyMs ?? 30_000)
            return
          }
          ctx.log.warn({ job: running.job_id }, 'agent job of a lost worker: marked failed')
          await check
            ?.announceLost(failed.state)
            .catch((err: unknown) => ctx.log.warn({ err }, 'ending the stream of a lost turn failed'))
        }
        // ended without telling us (worker lost, or the job expired): go on with the next message
        ctx.setState(await startNext(ctx, { ...unknownCount(ctx.state), running: null }))
      },
    },
  })
}

/** The chat actor of an actor host process. */
export const chatActorFactory: ActorFactory<{ localJobs?: LocalJobs }> = async ({
  nc,
  js,
  names,
  config,
  localJobs,
}) => {
  const store = await openJobStateStore(nc, names)
  const workers = localJobs === undefined ? undefined : await workersBucket(nc, names)
  const heartbeatMs = config.QUEUE_HEARTBEAT_SECONDS * 1000
  return chatActor({
    enqueue: { js, names, store, maxDepth: maxDepthOf(config) },
    store,
    agentTimeoutMs: config.AGENT_JOB_TIMEOUT * 1000,
    ...(localJobs === undefined || workers === undefined
      ? {}
      : {
          local: localJobs,
          localCheck: {
            everyMs: config.QUEUE_ACK_WAIT_SECONDS * 1000,
            runs: (job) => runsOnWorker(workers, heartbeatMs, job),
            announceLost: (job) => announceLostTurn({ js, names }, job),
          },
        }),
  })
}
