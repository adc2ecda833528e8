import { randomUUID } from 'node:crypto'
import type { JetStreamClient } from '@nats-io/jetstream'
import type { Config } from '../kernel/config.ts'
import type { Logger } from '../kernel/log.ts'
import type { Db } from '../platform/db.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import type { InvokeDeps } from '../feature/invoke-deps.ts'
import type { JobStateStore } from '../jobs/job-state.ts'
import { isTerminal, jobErrorText } from '../jobs/job-state.ts'
import { waitForJob } from '../jobs/wait.ts'
import type { JobExecutor } from '../jobs/worker.ts'
import { resolveAgentLlm } from '../llm/registry.ts'
import type { LlmClient } from '../llm/types.ts'
import type { ResourceService } from '../resources/service.ts'
import { watchListeners } from '../streaming/listeners.ts'
import { sendToActor } from '../../actors/runtime/send.ts'
import type { ActorTeller } from '../../actors/runtime/tell.ts'
import { chatProtocol } from '../../actors/protocols/chat.ts'
import { chatStore } from './store.ts'
import { seedChat } from './history-cache.ts'
import { followUpRunner, withFollowUps } from './follow-up.ts'
import { turnExecutor, TurnError, type Emit, type ResumeTo, type TurnResult } from './turn.ts'
import type { AgentRecord, ToolContext, ToolProviderFactory } from '../feature/tools.ts'
import { traceparentField } from '../platform/tracing.ts'

/*
 * The agent and sub-agent pools' executor, wired for a worker process: stream events, LLM
 * resolution, sub-agent delegation (a hidden chat of the sub-agent, its turn a `subagent` job the
 * parent waits for while lending its slot) and the end-of-turn report to the chat actor.
 */
export interface ChatWorkerDeps {
  db: Db
  nc: NatsConnection
  js: JetStreamClient
  names: NatsNames
  config: Config
  resources: ResourceService
  invoke: InvokeDeps
  /** The other features' agent tool providers (their `tools`, collected by the workers role). */
  tools: readonly ToolProviderFactory[]
  jobStore: JobStateStore
  emitter(channelId: string | null): Emit
  log: Logger
  /** The actor host of this process, if any: a turn's end is told to it when it works the chat. */
  actorsHere?: ActorTeller
}

/** Provider settings change rarely: a resolved client is reused for this long (a change applies within it). */
const LLM_CACHE_MS = 10_000

export function chatTurnExecutor(d: ChatWorkerDeps): JobExecutor {
  const store = chatStore(d.db)
  const llmCache = new Map<
    string,
    { at: number; value: Promise<{ client: LlmClient; model: string; provider: string; fallback?: string }> }
  >()

  /** A sub-agent turn in a hidden chat of its own, one delegation level deeper; returns its job id. */
  const startSubAgentTurn = async (
    ctx: ToolContext,
    agent: AgentRecord,
    message: string,
    resumeTo?: ResumeTo,
  ): Promise<string> => {
    const { chat } = await store.createInternal({
      userId: ctx.chat.user_id,
      agent: { id: agent.id, namespace: agent.namespace, name: agent.name },
      input: {},
      expiresIn: 86_400,
    })
    // its turn (often in this process) then reads nothing
    seedChat({ chat, history: [], count: 0 })
    const jobId = randomUUID()
    await sendToActor(
      d.js,
      d.names,
      chatProtocol,
      chat.id,
      'send',
      {
        job_id: jobId,
        content: message,
        channel_id: null,
        user_id: ctx.chat.user_id,
        pool: d.config.AGENT_SUBAGENT_QUEUE ? 'subagent' : 'agent',
        parent: { id: ctx.job.id, depth: ctx.job.depth },
        delegation_depth: ctx.delegationDepth + 1,
        ...(resumeTo === undefined ? {} : { resume_to: resumeTo }),
        ...traceparentField(),
      },
      { msgId: `chat-send-${jobId}`, fresh: true },
    )
    return jobId
  }
  const turns = turnExecutor({
    db: d.db,
    config: d.config,
    resources: d.resources,
    invoke: d.invoke,
    tools: d.tools,
    log: d.log,
    emitter: d.emitter,
    async llm(agent) {
      const settings = { llm_provider_id: agent.llm_provider_id ?? null, model: agent.model ?? null }
      const key = `${settings.llm_provider_id ?? ''}|${settings.model ?? ''}`
      const hit = llmCache.get(key)
      if (hit !== undefined && Date.now() - hit.at < LLM_CACHE_MS) return hit.value
      // a provider lookup and an api_key decryption per turn are avoidable I/O on the hot path
      const value = resolveAgentLlm({ resources: d.resources }, settings).then((r) => ({
        client: r.client,
        model: r.model,
        provider: r.provider.name,
        ...(r.fallback === undefined ? {} : { fallback: r.fallback }),
      }))
      llmCache.set(key, { at: Date.now(), value })
      value.catch(() => llmCache.delete(key))
      if (llmCache.size > 1000) llmCache.delete(llmCache.keys().next().value as string)
      return value
    },
    async delegate(ctx, agent, message) {
      const jobId = await startSubAgentTurn(ctx, agent, message)
      const done = await ctx.blocking(
        waitForJob(d.nc, d.names, d.jobStore, jobId, d.config.AGENT_DELEGATE_TIMEOUT * 1000),
      )
      // out of time, the wait answers the job as it still is (queued, running) or nothing
      if (done === null || !isTerminal(done.status))
        throw new TurnError(
          'agent.delegation_failed',
          `${agent.namespace}/${agent.name} did not answer: timeout (AGENT_DELEGATE_TIMEOUT, ${String(d.config.AGENT_DELEGATE_TIMEOUT)} s)`,
        )
      if (done.status !== 'completed')
        throw new TurnError(
          'agent.delegation_failed',
          `${agent.namespace}/${agent.name} did not answer: ${jobErrorText(done.error) ?? done.status}`,
        )
      return (done.result as TurnResult).message?.content ?? ''
    },
    async delegateSuspended(ctx, agent, message, toolCallId) {
      const channelId = (ctx.job.input as { channel_id?: string | null }).channel_id ?? null
      await startSubAgentTurn(ctx, agent, message, {
        chat_id: ctx.chat.id,
        tool_call_id: toolCallId,
        channel_id: channelId,
        user_id: ctx.chat.user_id,
      })
    },
    async resumeParent(to, result) {
      const history = await store.messages(to.chat_id, 200)
      const call = history.flatMap((m) => m.tool_calls ?? []).find((c) => c.id === to.tool_call_id)
      // appended once: a redelivered sub-agent end finds the result there already
      if (!history.some((m) => m.role === 'tool' && m.tool_call_id === to.tool_call_id)) {
        await store.append(to.chat_id, {
          role: 'tool',
          content: JSON.stringify(result),
          tool_call_id: to.tool_call_id,
          name: call?.function.name ?? null,
        })
        await d.emitter(to.channel_id)('tool_end', {
          tool_call_id: to.tool_call_id,
          name: call?.function.name ?? '',
          result,
        })
      }
      const jobId = randomUUID()
      await sendToActor(
        d.js,
        d.names,
        chatProtocol,
        to.chat_id,
        'send',
        {
          job_id: jobId,
          channel_id: to.channel_id,
          user_id: to.user_id,
          pool: 'agent',
          resume: true,
          ...traceparentField(),
        },
        { msgId: `chat-resume-${to.chat_id}-${to.tool_call_id}` },
      )
    },
    watchListeners: (channelId) =>
      watchListeners(d.nc, d.names, channelId, d.config.SSE_RECONNECT_WINDOW_SECONDS * 1000),
    async turnEnded(chatId, jobId, messageCount) {
      const msgId = `chat-ended-${jobId}`
      const ended = { job_id: jobId, ...(messageCount === undefined ? {} : { message_count: messageCount }) }
      // Usually the chat's actor runs in this process (it started the turn in one of its workers):
      // told in-process, without the stream's four messages. Should that process die before the
      // actor's state is written, the actor's watchdog finds the ended job, as for a lost send.
      if (d.actorsHere?.tell(chatProtocol, chatId, 'ended', ended, { msgId }) === true) return
      await sendToActor(d.js, d.names, chatProtocol, chatId, 'ended', ended, { msgId })
    },
  })
  // the agent pool also runs the follow-ups agents schedule (the schedule_message system tool)
  return withFollowUps(turns, followUpRunner(d))
}
