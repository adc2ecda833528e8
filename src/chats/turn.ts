import type { Config } from '../kernel/config.ts'
import type { Logger } from '../kernel/log.ts'
import type { Db } from '../platform/db.ts'
import type { InvokeDeps } from '../feature/invoke-deps.ts'
import type { JobExecutor } from '../jobs/worker.ts'
import type { LlmClient } from '../llm/types.ts'
import type { ResourceService } from '../resources/service.ts'
import type { ListenerWatch } from '../streaming/listeners.ts'
import type { MessageRow } from './store.ts'
import type { AgentRecord, ToolContext, ToolProviderFactory } from '../feature/tools.ts'
import type { JobState } from '../jobs/job-state.ts'
import { readTurnContext, runTurn, type TurnContextRead, type TurnJobContext } from './run-turn.ts'
import { turnRuntime } from './turn-runtime.ts'

/*
 * One turn of a chat, run as an `agent` (or `subagent`) job: the user message through the
 * on_user_message hooks, the context (system prompt rendered with the chat's input, preloaded
 * skills, initial_messages, the last MAX_HISTORY_MESSAGES), then LLM rounds — tool calls executed
 * in parallel, at most MAX_TOOL_ITERATIONS rounds — and the reply through the on_assistant_message
 * hooks. Events go to the turn's stream channel as they happen.
 * The job is run-turn.ts, the rounds rounds.ts (tool calls: tool-calls.ts, run-tool.ts), the hooks
 * hooks.ts, approvals resume-approval.ts; they share one `TurnRuntime` (turn-runtime.ts).
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
  /**
   * The chat's message count as its previous turn left it, when the chat actor knows nobody wrote
   * since: a worker holding exactly that many needs no read (src/chats/history-cache.ts).
   */
  message_count?: number
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
  /** The other features' agent tool providers, offered next to the chats' own. */
  tools: readonly ToolProviderFactory[]
  log: Logger
  /** The stream channel's publisher (no-op for a null channel). */
  emitter(channelId: string | null): Emit
  /**
   * The LLM client and model for an agent (src/llm/registry.ts `resolveProvider`), with the
   * provider's name (usage is counted per provider and model); `fallback` says
   * why the default provider stands in for the agent's own (deleted or disabled).
   */
  llm(agent: AgentRecord): Promise<{ client: LlmClient; model: string; provider: string; fallback?: string }>
  /** Runs a sub-agent's turn as a job and waits for its reply. */
  delegate(ctx: ToolContext, agent: AgentRecord, message: string): Promise<string>
  /** Starts a sub-agent turn whose reply resumes the parent chat later (suspend mode). */
  delegateSuspended(ctx: ToolContext, agent: AgentRecord, message: string, toolCallId: string): Promise<void>
  /** A sub-agent turn of a suspended parent ended: store its reply there and resume the parent. */
  resumeParent(to: ResumeTo, result: unknown): Promise<void>
  /**
   * Tells the chat's actor the turn ended (it starts the next queued message), with the chat's
   * message count after it when the turn was its only writer since its read.
   */
  turnEnded(chatId: string, jobId: string, messageCount: number | undefined): Promise<void>
  /**
   * Watches a streamed turn's channel for its last client leaving (src/streaming/listeners.ts):
   * the returned signal aborts the provider call, the tools and the turn. Absent: never.
   */
  watchListeners?(channelId: string): ListenerWatch
}

export { TurnError } from './turn-error.ts'

export { loadAgent } from './load-agent.ts'

export function turnExecutor(d: TurnDeps): JobExecutor {
  const rt = turnRuntime(d)
  const run = async (jc: TurnJobContext) => runTurn(rt, jc)
  // the chat with its history is read while the job is claimed (see runTurn: `jc.prefetched`)
  // and, started in this process, the turn runs while it is claimed (run-turn.ts: `ready`); its
  // reply is in the chat before the job's completion is written: a waiter here gets it first
  return Object.assign(run, {
    prefetch: (job: JobState): TurnContextRead => readTurnContext(rt, job),
    speculative: true,
    answersBeforeRecord: true,
  })
}
