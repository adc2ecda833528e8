import { randomUUID } from 'node:crypto'
import type { JetStreamClient } from '@nats-io/jetstream'
import { loadPrincipal } from '../auth/principal.ts'
import { enqueueJob, type EnqueueDeps } from '../jobs/enqueue.ts'
import type { JobState } from '../jobs/job-state.ts'
import type { JobContext, JobExecutor } from '../jobs/worker.ts'
import { agentKind } from '../kinds/agent/kind.ts'
import { knownSystemTools } from '../kinds/agent/system-tools.ts'
import type { Db } from '../platform/db.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { canOnResource } from '../resources/permissions.ts'
import type { ResourceService } from '../resources/service.ts'
import { sendToActor } from '../../actors/runtime/send.ts'
import { chatProtocol } from '../../actors/protocols/chat.ts'
import { loadAgent } from './load-agent.ts'
import { chatStore } from './store.ts'
import type { ToolContext } from '../feature/tools.ts'
import { TurnError } from './turn-error.ts'
import { traceparentField } from '../platform/tracing.ts'

/*
 * A follow-up message an agent scheduled in its chat (the `schedule_message` system tool): a
 * delayed job of the agent pool (`delay_seconds`' timer table, src/jobs/timers.ts), so it survives
 * restarts, shows as an execution of the chat's user (`scheduled`, then `completed` or `failed`
 * with the reason) and an admin may cancel it. When it is due, the chat, the agent and the user's
 * `chat` permission are checked again — the agent must still offer `schedule_message` — and the
 * message is sent to the chat's actor as the user's next message: a turn like any other, queued
 * behind a running one.
 */
export const FOLLOW_UP_KIND = 'chat.follow-up'

interface FollowUpInput {
  chat_id: string
  content: string
}

/** Enqueues the follow-up; answers its job (id and due time). */
export async function scheduleFollowUp(
  enqueue: EnqueueDeps,
  ctx: ToolContext,
  content: string,
  delaySeconds: number,
): Promise<JobState> {
  const input: FollowUpInput = { chat_id: ctx.chat.id, content }
  return enqueueJob(enqueue, {
    pool: 'agent',
    kind: FOLLOW_UP_KIND,
    namespace: ctx.agent.namespace,
    name: ctx.agent.name,
    input,
    userId: ctx.chat.user_id,
    triggerType: 'agent',
    triggerId: `chat:${ctx.chat.id}`,
    chatId: ctx.chat.id,
    parent: { id: ctx.job.id, depth: ctx.job.depth },
    delaySeconds,
    // like every agent job: one attempt
    maxAttempts: 1,
  })
}

export interface FollowUpDeps {
  db: Db
  js: JetStreamClient
  names: NatsNames
  resources: ResourceService
}

/** Runs a due follow-up: the checks of execution time, then the message to the chat's actor. */
export function followUpRunner(d: FollowUpDeps): (job: JobState) => Promise<{ chat_id: string; turn_job_id: string }> {
  const store = chatStore(d.db)
  return async (job) => {
    const input = job.input as FollowUpInput
    const chat = await store.get(input.chat_id)
    if (chat === null) throw new TurnError('chat.not_found', 'the chat no longer exists')
    if (chat.archived) throw new TurnError('chat.follow_up_refused', 'the chat was archived')
    const agent = await loadAgent(d.resources, chat.agent_id)
    if (agent === null)
      throw new TurnError('agent.not_found', `agent ${chat.agent_namespace}/${chat.agent_name} no longer exists`)
    if (!knownSystemTools(agent.system_tools).some((e) => e.name === 'schedule_message'))
      throw new TurnError(
        'chat.follow_up_refused',
        `agent ${agent.namespace}/${agent.name} no longer offers schedule_message`,
      )
    const principal = await loadPrincipal(d.db, { sub: chat.user_id, via: 'jwt' })
    if (
      !canOnResource(principal, agentKind, 'chat', {
        namespace: agent.namespace,
        name: agent.name,
        ownerId: agent.owner_id,
      })
    )
      throw new TurnError('auth.forbidden', `not permitted to chat with ${agent.namespace}/${agent.name}`)
    const turnJobId = randomUUID()
    // the follow-up's own id dedupes the send: it is sent once even if this job ran twice
    await sendToActor(
      d.js,
      d.names,
      chatProtocol,
      chat.id,
      'send',
      {
        job_id: turnJobId,
        content: input.content,
        channel_id: null,
        user_id: chat.user_id,
        pool: 'agent',
        ...traceparentField(),
      },
      { msgId: `chat-follow-up-${job.id}` },
    )
    return { chat_id: chat.id, turn_job_id: turnJobId }
  }
}

/** The agent pool's executor: chat turns, and the follow-ups that share their pool. */
export function withFollowUps(turn: JobExecutor, runFollowUp: (job: JobState) => Promise<unknown>): JobExecutor {
  const run = (jc: JobContext): Promise<unknown> => (jc.job.kind === FOLLOW_UP_KIND ? runFollowUp(jc.job) : turn(jc))
  return Object.assign(run, {
    // a follow-up reads no chat history before its claim
    ...(turn.prefetch === undefined
      ? {}
      : { prefetch: (job: JobState): unknown => (job.kind === FOLLOW_UP_KIND ? undefined : turn.prefetch?.(job)) }),
    ...(turn.speculative === undefined ? {} : { speculative: turn.speculative }),
    ...(turn.answersBeforeRecord === undefined ? {} : { answersBeforeRecord: turn.answersBeforeRecord }),
  })
}
