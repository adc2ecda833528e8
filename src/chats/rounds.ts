import type { Config } from '../kernel/config.ts'
import type { Logger } from '../kernel/log.ts'
import type { ChatMessage, LlmClient, ToolCall, ToolDefinition } from '../llm/types.ts'
import { renderTemplate } from '../templates/render.ts'
import { runHooks } from './hooks.ts'
import type { ContextMessage, Transcript } from './transcript.ts'
import { requestApprovals, runToolCalls } from './tool-calls.ts'
import { discoverTools, preloadedSkills, type ToolContext } from './tools.ts'
import { truncateForContext } from './truncate.ts'
import type { Emit, TurnResult } from './turn.ts'
import { TurnError } from './turn-error.ts'
import type { TurnRuntime } from './turn-runtime.ts'

type Usage = NonNullable<TurnResult['usage']>

/** A stored message as the LLM sees it (tool results truncated to TOOL_RESULT_CONTEXT_MAX_SIZE). */
export function toLlm(config: Config, m: ContextMessage): ChatMessage {
  if (m.role === 'tool') return { role: 'tool', content: truncateForContext(m.content ?? '', config.TOOL_RESULT_CONTEXT_MAX_SIZE), tool_call_id: m.tool_call_id ?? '' }
  if (m.role === 'assistant' && m.tool_calls !== null && m.tool_calls.length > 0) return { role: 'assistant', content: m.content, tool_calls: m.tool_calls }
  return { role: m.role, content: m.content ?? '' }
}

/**
 * The LLM rounds of a turn: context, one LLM call per round, tool calls run (approvals pause the
 * turn, sub-agents in suspend mode suspend it), until the model answers with text or
 * MAX_TOOL_ITERATIONS is exceeded.
 */
export async function rounds(rt: TurnRuntime, ctx: ToolContext, emit: Emit, log: Logger, tx: Transcript, ready?: Promise<void>): Promise<TurnResult> {
  const { d } = rt
  const { chat, agent } = ctx
  const [{ client, model }, tools, skills] = await Promise.all([d.llm(agent), discoverTools(rt.providers, ctx), preloadedSkills(rt.toolDeps, ctx.principal, agent)])
  const rendered = renderTemplate(agent.system_prompt, chat.input)
  const system = [rendered, ...skills.map((s) => `## Skill ${s.namespace}/${s.name}\n${s.content}`)].filter((s) => s !== '').join('\n\n')
  const initial = agent.initial_messages.map((m): ChatMessage => ({ role: m.role, content: m.content }))
  const toolDefs = [...tools.values()].map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }))
  const bufferReply = agent.hooks.on_assistant_message.some((h) => h.async !== true)
  const maxRounds = d.config.MAX_TOOL_ITERATIONS
  const usage: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }
  for (let round = 0; ; round++) {
    // the history read with the chat plus what this turn added (nobody else writes the chat meanwhile)
    const history = tx.window(d.config.MAX_HISTORY_MESSAGES).map((m) => toLlm(d.config, m))
    // a history window must not start with tool results whose call fell out of it
    while (history.length > 0 && history[0]?.role === 'tool') history.shift()
    const messages: ChatMessage[] = [...(system === '' ? [] : [{ role: 'system' as const, content: system }]), ...initial, ...history]
    const offerTools = round < maxRounds && toolDefs.length > 0
    const { text, calls } = await llmRound(ctx, { client, model }, { messages, tools: offerTools ? toolDefs : undefined, streamText: !bufferReply }, usage, emit)
    // hooks and tools follow only once the turn's claim is held (a run started before it, run-turn.ts)
    await ready
    if (calls.length === 0) return finishReply(rt, ctx, text, bufferReply, usage, emit, log, tx)
    if (round >= maxRounds) throw new TurnError('turn.too_many_tool_rounds', `stopped after MAX_TOOL_ITERATIONS (${String(maxRounds)}) tool rounds`)
    tx.add({ role: 'assistant', content: text === '' ? null : text, tool_calls: calls })
    // stored before the tools run: a sub-agent in suspend mode writes its answer into this chat
    await tx.flush()
    await emit('message', { content: null, tool_calls: calls, finish_reason: 'tool_calls' })
    // approvals first: the turn pauses after the others ran
    const waiting = calls.filter((c) => tools.get(c.function.name)?.requiresApproval === true)
    const now = calls.filter((c) => !waiting.includes(c))
    const suspended = await runToolCalls(rt, ctx, tools, now, emit, tx)
    if (suspended > 0) {
      await tx.flush()
      return { status: 'suspended', message: null }
    }
    if (waiting.length > 0) {
      await tx.flush()
      await requestApprovals(rt, ctx, tools, waiting, emit)
      await emit('done', { status: 'awaiting_approval' })
      return { status: 'awaiting_approval', message: null }
    }
  }
}

/** One LLM call: text deltas streamed as they come (unless the reply is buffered for hooks), the round's usage added to `usage`. */
export async function llmRound(
  ctx: ToolContext,
  llm: { client: LlmClient; model: string },
  req: { messages: ChatMessage[]; tools: ToolDefinition[] | undefined; streamText: boolean },
  usage: Usage,
  emit: Emit,
): Promise<{ text: string; calls: ToolCall[] }> {
  const { agent, signal } = ctx
  let text = ''
  let calls: ToolCall[] = []
  for await (const ev of llm.client.stream({ model: llm.model, messages: req.messages, ...(req.tools === undefined ? {} : { tools: req.tools }), temperature: agent.temperature, ...(typeof agent.max_tokens === 'number' ? { max_tokens: agent.max_tokens } : {}), signal })) {
    if (ev.type === 'text') {
      text += ev.delta
      if (req.streamText) await emit('message', { content: ev.delta, tool_calls: null, finish_reason: null })
    } else if (ev.type === 'done') {
      calls = ev.tool_calls
      text = ev.content ?? text
      usage.prompt_tokens += ev.usage.prompt_tokens
      usage.completion_tokens += ev.usage.completion_tokens
      usage.total_tokens += ev.usage.total_tokens
    }
  }
  return { text, calls }
}

/** The model's text answer: through the on_assistant_message hooks (sync ones were buffered for), stored, `done` sent. */
export async function finishReply(rt: TurnRuntime, ctx: ToolContext, text: string, bufferReply: boolean, usage: Usage, emit: Emit, log: Logger, tx: Transcript): Promise<TurnResult> {
  const { chat, agent } = ctx
  let content = text
  if (bufferReply) {
    const gate = await runHooks(rt, 'on_assistant_message', ctx.principal, chat, agent, ctx.job, { role: 'assistant', content }, log)
    content = 'block' in gate ? gate.reply : gate.content
    await emit('message', { content, tool_calls: null, finish_reason: null })
  } else {
    void runHooks(rt, 'on_assistant_message', ctx.principal, chat, agent, ctx.job, { role: 'assistant', content }, log).catch(() => undefined)
  }
  tx.add({ role: 'assistant', content })
  // the turn's one insert: the user message (and any tool results) with the reply
  const message = (await tx.flush()).at(-1) ?? null
  await emit('message', { content: '', tool_calls: null, finish_reason: 'stop' })
  await emit('done', { status: 'completed', usage })
  return { status: 'completed', message, usage }
}
