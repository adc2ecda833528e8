/**
 * One record of LLM usage, as `usage_record` (migrations/0040-usage.sql) takes it as jsonb: the
 * tokens and the provider's reported cost of one or more calls, attributed to a user, an agent, a
 * provider and a model on one UTC day.
 */
export interface UsageEntry {
  /** `YYYY-MM-DD`, UTC (`utcDay`). */
  day: string
  user_id: string
  /** `<namespace>/<name>`; '' for the OpenAI adapter's provider models (no agent). */
  agent: string
  agent_id: string | null
  /** The llm_provider's name. */
  provider: string
  model: string
  prompt_tokens: number
  completion_tokens: number
  total_tokens: number
  /** Sum of the costs the provider reported; null when it reported none. */
  cost: number | null
  /** LLM calls counted. */
  calls: number
}

/** What one call adds: its tokens and the cost its provider reported (absent: none). */
export interface CallUsage {
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number }
  cost?: number | undefined
}

/** `entry` with one more call added (a new object). */
export function addCall(entry: UsageEntry, call: CallUsage): UsageEntry {
  return {
    ...entry,
    prompt_tokens: entry.prompt_tokens + call.usage.prompt_tokens,
    completion_tokens: entry.completion_tokens + call.usage.completion_tokens,
    total_tokens: entry.total_tokens + call.usage.total_tokens,
    cost: call.cost === undefined ? entry.cost : (entry.cost ?? 0) + call.cost,
    calls: entry.calls + 1,
  }
}

/** An entry of no calls yet for who, what and when. */
export function emptyEntry(
  o: Pick<UsageEntry, 'day' | 'user_id' | 'agent' | 'agent_id' | 'provider' | 'model'>,
): UsageEntry {
  return { ...o, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, cost: null, calls: 0 }
}
