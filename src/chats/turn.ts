import { loadPrincipal, type Principal } from '../auth/principal.ts'
import type { Config } from '../kernel/config.ts'
import type { Logger } from '../kernel/log.ts'
import type { Db } from '../platform/db.ts'
import { agentKind } from '../kinds/agent/kind.ts'
import { functionKind } from '../kinds/function/kind.ts'
import { invokeFunction, type InvokeDeps } from '../functions/invoke.ts'
import type { JobState } from '../jobs/job-state.ts'
import type { JobContext, JobExecutor } from '../jobs/worker.ts'
import type { ChatMessage, LlmClient, ToolCall } from '../llm/types.ts'
import { canOnResource } from '../resources/permissions.ts'
import type { ResourceService } from '../resources/service.ts'
import type { ListenerWatch } from '../streaming/listeners.ts'
import { renderTemplate } from '../templates/render.ts'
import { chatStore, type ChatRow, type MessageRow } from './store.ts'
import { discoverTools, preloadedSkills, SUSPENDED, toolProviders, type AgentRecord, type Tool, type ToolContext, type ToolDeps } from './tools.ts'
import { truncateForContext } from './truncate.ts'

/*
 * One turn of a chat, run as an `agent` (or `subagent`) job: the user message through the
 * on_user_message hooks, the context (system prompt rendered with the chat's input, preloaded
 * skills, initial_messages, the last MAX_HISTORY_MESSAGES), then LLM rounds — tool calls executed
 * in parallel, at most MAX_TOOL_ITERATIONS rounds — and the reply through the on_assistant_message
 * hooks. Events go to the turn's stream channel as they happen (WIRE.md "Chats and SSE").
 */
export interface TurnInput {
  chat_id: string
  /** The user's message; absent when the turn resumes after a tool approval. */
  content?: string
  channel_id: string | null
  /** Resume after POST /chats/{id}/approve-tool. */
  approval?: { tool_call_id: string; approved: boolean }
  /** Continue a suspended turn once its sub-agents answered (AGENT_DELEGATE_MODE=suspend). */
  resume?: boolean
}

export interface ResumeTo {
  chat_id: string
  tool_call_id: string
  channel_id: string | null
  user_id: string
}

export interface TurnResult {
  status: 'completed' | 'blocked' | 'awaiting_approval' | 'suspended'
  message: MessageRow | null
  /** Tokens of every LLM round of this turn (the provider's own counts). */
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number }
}

export type Emit = (event: string, data: unknown) => Promise<void>

export interface TurnDeps {
  db: Db
  config: Config
  resources: ResourceService
  invoke: InvokeDeps
  log: Logger
  /** The stream channel's publisher (no-op for a null channel). */
  emitter(channelId: string | null): Emit
  /** The LLM client and model for an agent (provider resolution of SPEC §2.1). */
  llm(agent: AgentRecord): Promise<{ client: LlmClient; model: string }>
  /** Runs a sub-agent's turn as a job and waits for its reply. */
  delegate(ctx: ToolContext, agent: AgentRecord, message: string): Promise<string>
  /** Starts a sub-agent turn whose reply resumes the parent chat later (suspend mode). */
  delegateSuspended(ctx: ToolContext, agent: AgentRecord, message: string, toolCallId: string): Promise<void>
  /** A sub-agent turn of a suspended parent ended: store its reply there and resume the parent. */
  resumeParent(to: ResumeTo, result: unknown): Promise<void>
  /** Tells the chat's actor the turn ended (it starts the next queued message). */
  turnEnded(chatId: string, jobId: string): Promise<void>
  /**
   * Watches a streamed turn's channel for its last client leaving (src/streaming/listeners.ts):
   * the returned signal aborts the provider call, the tools and the turn. Absent: never.
   */
  watchListeners?(channelId: string): ListenerWatch
}

export class TurnError extends Error {
  readonly code: string
  constructor(code: string, message: string) {
    super(message)
    this.code = code
  }
}

/** The chat's agent, if it still exists and is active (the platform's own read: the turn checks `chat` permission itself). */
export async function loadAgent(resources: ResourceService, id: string): Promise<AgentRecord | null> {
  const agent = await resources.byId(agentKind, id)
  return agent === null || agent.is_active === false ? null : (agent as AgentRecord)
}

type HookReply = { content?: string; block?: boolean; reply?: string } | null

export function turnExecutor(d: TurnDeps): JobExecutor {
  const store = chatStore(d.db)
  const toolDeps: ToolDeps = { db: d.db, config: d.config, resources: d.resources, invoke: d.invoke, delegate: (c, a, m) => d.delegate(c, a, m), delegateSuspended: (c, a, m, id) => d.delegateSuspended(c, a, m, id) }
  const providers = toolProviders(toolDeps)

  /** Runs the hooks of one event: async ones fire and forget, sync ones may replace or block. */
  const runHooks = async (which: 'on_user_message' | 'on_assistant_message', p: Principal, chat: ChatRow, agent: AgentRecord, job: JobState, message: { role: string; content: string }, log: Logger): Promise<{ content: string } | { block: true; reply: string }> => {
    const hooks = agent.hooks[which]
    let content = message.content
    for (const hook of hooks) {
      const [ns = '', name = ''] = hook.function.split('/')
      const fn = await d.resources.get(p, functionKind, { namespace: ns, name }).catch(() => null)
      if (fn === null || !canOnResource(p, functionKind, 'execute', { namespace: ns, name, ownerId: (fn['owner_id'] as string | null) ?? null })) {
        log.warn({ hook: hook.function }, 'hook function not found or not permitted: skipped')
        continue
      }
      const input = { message: { role: message.role, content }, chat_id: chat.id, agent: { namespace: agent.namespace, name: agent.name }, user_id: chat.user_id }
      const run = invokeFunction(d.invoke, p, fn, { input, triggerType: 'hook', triggerId: `${which}:${chat.id}`, chatId: chat.id, parent: { id: job.id, depth: job.depth } })
      if (hook.async === true) {
        run.catch((err: unknown) => log.warn({ err, hook: hook.function }, 'async hook failed'))
        continue
      }
      const out = await run
      if (out.status !== 'success') {
        if (out.status === 'timeout' && hook.on_timeout === 'block') return { block: true, reply: 'The message could not be checked in time; please try again.' }
        log.warn({ hook: hook.function, error: out.error }, 'hook failed: message passes unchanged')
        continue
      }
      const r = out.result as HookReply
      if (r !== null && typeof r === 'object') {
        if (r.block === true) return { block: true, reply: typeof r.reply === 'string' ? r.reply : '' }
        if (typeof r.content === 'string') content = r.content
      }
    }
    return { content }
  }

  const toLlm = (m: MessageRow): ChatMessage => {
    if (m.role === 'tool') return { role: 'tool', content: truncateForContext(m.content ?? '', d.config.TOOL_RESULT_CONTEXT_MAX_SIZE), tool_call_id: m.tool_call_id ?? '' }
    if (m.role === 'assistant' && m.tool_calls !== null && m.tool_calls.length > 0) return { role: 'assistant', content: m.content, tool_calls: m.tool_calls }
    return { role: m.role, content: m.content ?? '' }
  }

  return async (jc: JobContext & { blocking?: <T>(p: Promise<T>) => Promise<T> }) => {
    const { job } = jc
    const input = job.input as TurnInput
    // A streamed turn nobody listens to any more is cancelled (after the reconnect window);
    // a synchronous send (no channel) is unaffected.
    const watch = input.channel_id === null || d.watchListeners === undefined ? undefined : d.watchListeners(input.channel_id)
    const signal = watch === undefined ? jc.signal : AbortSignal.any([jc.signal, watch.signal])
    const emit = d.emitter(input.channel_id)
    const log = jc.log.child({ chat: input.chat_id })
    const resumeTo = (job.meta ?? {})['resume_to'] as ResumeTo | undefined
    let parentResult: unknown = { error: 'the sub-agent failed' }
    try {
      const chat = await store.get(input.chat_id)
      if (chat === null) throw new TurnError('chat.not_found', 'the chat no longer exists')
      // permissions now, not when the message was accepted
      const [agent, principal] = await Promise.all([loadAgent(d.resources, chat.agent_id), loadPrincipal(d.db, { sub: chat.user_id, via: 'jwt' })])
      if (agent === null) throw new TurnError('agent.not_found', `agent ${chat.agent_namespace}/${chat.agent_name} no longer exists`)
      if (!canOnResource(principal, agentKind, 'chat', { namespace: agent.namespace, name: agent.name, ownerId: agent.owner_id })) throw new TurnError('auth.forbidden', `not permitted to chat with ${agent.namespace}/${agent.name}`)
      const delegationDepth = Number((job.meta ?? {})['delegation_depth'] ?? 0)
      const ctx: ToolContext = { principal, chat, agent, job, delegationDepth, signal, blocking: jc.blocking ?? (<T>(p: Promise<T>) => p) }

      if (input.resume === true) {
        // resumed by a sub-agent's reply: go on only when every call of the last round has its result
        const history = await store.messages(chat.id, 200)
        const lastCalls = [...history].reverse().find((m) => m.role === 'assistant' && m.tool_calls !== null)?.tool_calls ?? []
        const answered = new Set(history.filter((m) => m.role === 'tool').map((m) => m.tool_call_id))
        if (lastCalls.some((c) => !answered.has(c.id))) return { status: 'suspended', message: null } satisfies TurnResult
      } else if (input.approval !== undefined) {
        await resumeApproval(ctx, input.approval)
      } else {
        const gate = await runHooks('on_user_message', principal, chat, agent, job, { role: 'user', content: input.content ?? '' }, log)
        if ('block' in gate) {
          await store.append(chat.id, { role: 'user', content: input.content ?? '' })
          const reply = await store.append(chat.id, { role: 'assistant', content: gate.reply })
          await emit('message', { content: gate.reply, tool_calls: null, finish_reason: 'stop' })
          await emit('done', { status: 'blocked' })
          return { status: 'blocked', message: reply } satisfies TurnResult
        }
        await store.append(chat.id, { role: 'user', content: gate.content })
      }
      const out = await rounds(ctx, emit, log)
      parentResult = { reply: out.message?.content ?? '' }
      return out
    } catch (caught) {
      // Abandoned by its listeners: whatever the abort broke (the LLM call, a tool), that is the reason.
      const err: unknown = watch?.signal.aborted === true && !jc.signal.aborted ? new TurnError('chat.stream_abandoned', (watch.signal.reason as Error).message) : caught
      if (err !== caught) log.info({ channel: input.channel_id }, 'streamed turn cancelled: no client listens')
      parentResult = { error: err instanceof Error ? err.message : String(err) }
      const code = err instanceof TurnError ? err.code : typeof (err as { code?: unknown }).code === 'string' ? String((err as { code: string }).code) : 'turn.failed'
      await emit('error', { detail: err instanceof Error ? err.message : String(err), code }).catch(() => undefined)
      throw err
    } finally {
      watch?.stop()
      await d.turnEnded(input.chat_id, job.id).catch((err: unknown) => log.warn({ err }, 'telling the chat actor the turn ended failed'))
      if (resumeTo !== undefined) await d.resumeParent(resumeTo, parentResult).catch((err: unknown) => log.warn({ err }, 'resuming the parent turn failed'))
    }
  }

  async function resumeApproval(ctx: ToolContext, a: { tool_call_id: string; approved: boolean }): Promise<void> {
    const history = await store.messages(ctx.chat.id, 50)
    const call = history.flatMap((m) => m.tool_calls ?? []).find((c) => c.id === a.tool_call_id)
    if (call === undefined) throw new TurnError('chat.approval_unknown', `no tool call ${a.tool_call_id} in this chat`)
    let result: unknown
    if (!a.approved) result = { error: 'the user rejected this tool call' }
    else {
      const tools = await discoverTools(providers, ctx)
      const tool = tools.get(call.function.name)
      result = tool === undefined ? { error: `tool ${call.function.name} is no longer available` } : await runTool(tool, call, ctx)
    }
    await store.append(ctx.chat.id, { role: 'tool', content: storedResult(result), tool_call_id: call.id, name: call.function.name })
  }

  function storedResult(result: unknown): string {
    const text = typeof result === 'string' ? result : JSON.stringify(result ?? null)
    const max = d.config.TOOL_RESULT_MAX_SIZE
    return Buffer.byteLength(text) <= max ? text : truncateForContext(result, max)
  }

  async function runTool(tool: Tool, call: ToolCall, ctx: ToolContext): Promise<unknown> {
    let args: Record<string, unknown>
    try {
      const parsed = JSON.parse(call.function.arguments === '' ? '{}' : call.function.arguments) as unknown
      args = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {}
    } catch {
      return { error: 'the arguments were not valid JSON' }
    }
    try {
      return await tool.run(args, ctx, { id: call.id })
    } catch (err) {
      return { error: err instanceof Error ? err.message : String(err) }
    }
  }

  async function rounds(ctx: ToolContext, emit: Emit, log: Logger): Promise<TurnResult> {
    const { chat, agent, signal } = ctx
    const [{ client, model }, tools, skills] = await Promise.all([d.llm(agent), discoverTools(providers, ctx), preloadedSkills(toolDeps, ctx.principal, agent)])
    const rendered = renderTemplate(agent.system_prompt, chat.input)
    const system = [rendered, ...skills.map((s) => `## Skill ${s.namespace}/${s.name}\n${s.content}`)].filter((s) => s !== '').join('\n\n')
    const initial = agent.initial_messages.map((m): ChatMessage => ({ role: m.role, content: m.content }))
    const toolDefs = [...tools.values()].map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }))
    const bufferReply = agent.hooks.on_assistant_message.some((h) => h.async !== true)
    const maxRounds = d.config.MAX_TOOL_ITERATIONS
    const usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }
    for (let round = 0; ; round++) {
      const history = (await store.messages(chat.id, d.config.MAX_HISTORY_MESSAGES)).map(toLlm)
      // a history window must not start with tool results whose call fell out of it
      while (history.length > 0 && history[0]?.role === 'tool') history.shift()
      const messages: ChatMessage[] = [...(system === '' ? [] : [{ role: 'system' as const, content: system }]), ...initial, ...history]
      const offerTools = round < maxRounds && toolDefs.length > 0
      let text = ''
      let calls: ToolCall[] = []
      for await (const ev of client.stream({ model, messages, ...(offerTools ? { tools: toolDefs } : {}), temperature: agent.temperature, ...(typeof agent.max_tokens === 'number' ? { max_tokens: agent.max_tokens } : {}), signal })) {
        if (ev.type === 'text') {
          text += ev.delta
          if (!bufferReply) await emit('message', { content: ev.delta, tool_calls: null, finish_reason: null })
        } else if (ev.type === 'done') {
          calls = ev.tool_calls
          text = ev.content ?? text
          usage.prompt_tokens += ev.usage.prompt_tokens
          usage.completion_tokens += ev.usage.completion_tokens
          usage.total_tokens += ev.usage.total_tokens
        }
      }
      if (calls.length === 0) {
        let content = text
        if (bufferReply) {
          const gate = await runHooks('on_assistant_message', ctx.principal, chat, agent, ctx.job, { role: 'assistant', content }, log)
          content = 'block' in gate ? gate.reply : gate.content
          await emit('message', { content, tool_calls: null, finish_reason: null })
        } else {
          void runHooks('on_assistant_message', ctx.principal, chat, agent, ctx.job, { role: 'assistant', content }, log).catch(() => undefined)
        }
        const message = await store.append(chat.id, { role: 'assistant', content })
        await emit('message', { content: '', tool_calls: null, finish_reason: 'stop' })
        await emit('done', { status: 'completed', usage })
        return { status: 'completed', message, usage }
      }
      if (round >= maxRounds) throw new TurnError('turn.too_many_tool_rounds', `stopped after MAX_TOOL_ITERATIONS (${String(maxRounds)}) tool rounds`)
      await store.append(chat.id, { role: 'assistant', content: text === '' ? null : text, tool_calls: calls })
      await emit('message', { content: null, tool_calls: calls, finish_reason: 'tool_calls' })
      // approvals first: the turn pauses after the others ran
      const waiting = calls.filter((c) => tools.get(c.function.name)?.requiresApproval === true)
      const now = calls.filter((c) => !waiting.includes(c))
      let suspended = 0
      await Promise.all(
        now.map(async (call) => {
          const tool = tools.get(call.function.name)
          await emit('tool_start', { tool_call_id: call.id, name: call.function.name, arguments: call.function.arguments, description: tool?.description ?? '' })
          const result = tool === undefined ? { error: `unknown tool ${call.function.name}` } : await runTool(tool, call, ctx)
          if (result === SUSPENDED) {
            // the reply is appended (and tool_end sent) when the sub-agent answers
            suspended++
            return
          }
          await store.append(chat.id, { role: 'tool', content: storedResult(result), tool_call_id: call.id, name: call.function.name })
          await emit('tool_end', { tool_call_id: call.id, name: call.function.name, result })
        }),
      )
      if (suspended > 0) return { status: 'suspended', message: null }
      if (waiting.length > 0) {
        for (const call of waiting) {
          const tool = tools.get(call.function.name) as Tool
          let args: Record<string, unknown> = {}
          try {
            args = JSON.parse(call.function.arguments || '{}') as Record<string, unknown>
          } catch {
            // shown as empty arguments; the approval decides
          }
          const approval = { tool_call_id: call.id, function_namespace: tool.ref?.namespace ?? '', function_name: tool.ref?.name ?? call.function.name, arguments: args }
          await store.addApproval(chat.id, approval)
          await emit('approval_required', approval)
        }
        await emit('done', { status: 'awaiting_approval' })
        return { status: 'awaiting_approval', message: null }
      }
    }
  }
}
