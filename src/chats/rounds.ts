import type { Logger } from '../kernel/log.ts'
import type { ChatMessage, LlmClient, ResponseFormat, ToolCall, ToolDefinition } from '../llm/types.ts'
import { renderTemplate } from '../templates/render.ts'
import { runHooks } from './hooks.ts'
import type { Transcript } from './transcript.ts'
import { requestApprovals, runToolCalls } from './tool-calls.ts'
import { discoverTools, preloadedSkills } from './tools.ts'
import { type ToolContext } from '../feature/tools.ts'
import { contextHistory } from './context-window.ts'
import { checkOutput, correction, outputSchemaOf, responseFormatFor } from './output-schema.ts'
import type { Emit, TurnResult } from './turn.ts'
import { TurnError } from './turn-error.ts'
import type { TurnRuntime } from './turn-runtime.ts'
import { utcDay } from '../usage/day.ts'
import { emptyEntry, type CallUsage } from '../usage/entry.ts'

type Usage = NonNullable<TurnResult['usage']>

/**
 * The LLM rounds of a turn: context, one LLM call per round, tool calls run (approvals pause the
 * turn, sub-agents in suspend mode suspend it), until the model answers with text or
 * MAX_TOOL_ITERATIONS is exceeded. With an output_schema the answer is sent as structured output,
 * buffered (not streamed) and checked; an answer that does not match is retried once with the
 * problem told to the model (that exchange is not stored), then the turn fails with
 * `agent.output_invalid` (src/chats/output-schema.ts).
 */
export async function rounds(
  rt: TurnRuntime,
  ctx: ToolContext,
  emit: Emit,
  log: Logger,
  tx: Transcript,
  ready?: Promise<void>,
): Promise<TurnResult> {
  const { d } = rt
  const { chat, agent } = ctx
  const [{ client, model, provider, fallback }, tools, skills] = await Promise.all([
    d.llm(agent),
    discoverTools(rt.providers, ctx),
    preloadedSkills(rt.toolDeps, ctx.principal, agent),
  ])
  // resolution is cached per worker: the fallback to the default provider is told here, once per turn
  if (fallback !== undefined) log.warn({ agent: `${agent.namespace}/${agent.name}` }, fallback)
  const rendered = renderTemplate(agent.system_prompt, chat.input)
  const system = [rendered, ...skills.map((s) => `## Skill ${s.namespace}/${s.name}\n${s.content}`)]
    .filter((s) => s !== '')
    .join('\n\n')
  const initial = agent.initial_messages.map((m): ChatMessage => ({ role: m.role, content: m.content }))
  const toolDefs = [...tools.values()].map((t) => ({
    name: t.name,
    description: t.description,
    parameters: t.parameters,
  }))
  const outputSchema = outputSchemaOf(agent)
  const responseFormat = outputSchema === null ? undefined : responseFormatFor(agent, outputSchema)
  // an answer that is checked is sent once it passed, not streamed as it comes
  const bufferReply = outputSchema !== null || agent.hooks.on_assistant_message.some((h) => h.async !== true)
  /** The invalid answer and the model's correction, in the context of the one retry. */
  let retry: ChatMessage[] = []
  let retried = false
  const maxRounds = d.config.MAX_TOOL_ITERATIONS
  const usage: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }
  // each call's tokens and reported cost, recorded with the turn's next write (src/usage/): the
  // chat's user on the turn's UTC day, this agent, provider and model
  const base = emptyEntry({
    day: utcDay(new Date()),
    user_id: chat.user_id,
    agent: `${agent.namespace}/${agent.name}`,
    agent_id: agent.id,
    provider,
    model,
  })
  const meter = (call: CallUsage): void => tx.spend(base, call)
  for (let round = 0; ; round++) {
    // the history read with the chat plus what this turn added (nobody else writes the chat meanwhile)
    const history = contextHistory(d.config, tx.window(d.config.MAX_HISTORY_MESSAGES))
    const messages: ChatMessage[] = [
      ...(system === '' ? [] : [{ role: 'system' as const, content: system }]),
      ...initial,
      ...history,
      ...retry,
    ]
    const offerTools = round < maxRounds && toolDefs.length > 0
    const { text, calls } = await llmRound(
      ctx,
      { client, model },
      { messages, tools: offerTools ? toolDefs : undefined, streamText: !bufferReply, responseFormat },
      usage,
      emit,
      meter,
    )
    // hooks and tools follow only once the turn's claim is held (a run started before it, run-turn.ts)
    await ready
    if (calls.length === 0) {
      if (outputSchema === null) return finishReply(rt, ctx, text, bufferReply, usage, emit, log, tx)
      const checked = checkOutput(outputSchema, text)
      if (checked.ok) return finishReply(rt, ctx, checked.content, bufferReply, usage, emit, log, tx)
      if (retried)
        throw new TurnError(
          'agent.output_invalid',
          `the answer does not match the agent's output_schema (after one retry): ${checked.problem}`,
        )
      log.info({ problem: checked.problem }, 'the answer does not match output_schema: asking once more')
      retried = true
      retry = correction(text, checked.problem)
      continue
    }
    // tool calls instead of the corrected answer: the exchange before them is not part of the chat
    retry = []
    if (round >= maxRounds)
      throw new TurnError(
        'turn.too_many_tool_rounds',
        `stopped after MAX_TOOL_ITERATIONS (${String(maxRounds)}) tool rounds`,
      )
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
  req: {
    messages: ChatMessage[]
    tools: ToolDefinition[] | undefined
    streamText: boolean
    responseFormat?: ResponseFormat | undefined
  },
  usage: Usage,
  emit: Emit,
  meter?: (call: CallUsage) => void,
): Promise<{ text: string; calls: ToolCall[] }> {
  const { agent, signal } = ctx
  let text = ''
  let calls: ToolCall[] = []
  for await (const ev of llm.client.stream({
    model: llm.model,
    messages: req.messages,
    ...(req.tools === undefined ? {} : { tools: req.tools }),
    temperature: agent.temperature,
    ...(typeof agent.max_tokens === 'number' ? { max_tokens: agent.max_tokens } : {}),
    ...(req.responseFormat === undefined ? {} : { response_format: req.responseFormat }),
    signal,
  })) {
    if (ev.type === 'text') {
      text += ev.delta
      if (req.streamText) await emit('message', { content: ev.delta, tool_calls: null, finish_reason: null })
    } else if (ev.type === 'done') {
      calls = ev.tool_calls
      text = ev.content ?? text
      usage.prompt_tokens += ev.usage.prompt_tokens
      usage.completion_tokens += ev.usage.completion_tokens
      usage.total_tokens += ev.usage.total_tokens
      meter?.({ usage: ev.usage, cost: ev.cost })
    }
  }
  return { text, calls }
}

/** The model's text answer: through the on_assistant_message hooks (sync ones were buffered for), stored, `done` sent. */
export async function finishReply(
  rt: TurnRuntime,
  ctx: ToolContext,
  text: string,
  bufferReply: boolean,
  usage: Usage,
  emit: Emit,
  log: Logger,
  tx: Transcript,
): Promise<TurnResult> {
  const { chat, agent } = ctx
  let content = text
  if (bufferReply) {
    const gate = await runHooks(
      rt,
      'on_assistant_message',
      ctx.principal,
      chat,
      agent,
      ctx.job,
      { role: 'assistant', content },
      log,
    )
    content = 'block' in gate ? gate.reply : gate.content
    await emit('message', { content, tool_calls: null, finish_reason: null })
  } else {
    void runHooks(
      rt,
      'on_assistant_message',
      ctx.principal,
      chat,
      agent,
      ctx.job,
      { role: 'assistant', content },
      log,
    ).catch(() => undefined)
  }
  tx.add({ role: 'assistant', content })
  // the turn's one insert: the user message (and any tool results) with the reply
  const message = (await tx.flush()).at(-1) ?? null
  await emit('message', { content: '', tool_calls: null, finish_reason: 'stop' })
  await emit('done', { status: 'completed', usage })
  return { status: 'completed', message, usage }
}
