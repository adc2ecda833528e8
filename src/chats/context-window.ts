import type { Config } from '../kernel/config.ts'
import type { ChatMessage } from '../llm/types.ts'
import type { ContextMessage } from './transcript.ts'
import { truncateForContext } from './truncate.ts'

/*
 * The chat history as the LLM sees it in one round:
 *  - a window must not start with tool results whose call fell out of it;
 *  - every tool result is bounded by TOOL_RESULT_CONTEXT_MAX_SIZE (src/chats/truncate.ts);
 *  - only the last TOOL_RESULT_MAX_INLINE tool results are kept inline; older ones become a short
 *    reference (`omittedResult`), so a long tool-using chat does not carry every old result into
 *    every call. The results the model is about to answer (the trailing tool messages of the
 *    window: the last round's) are always inline, also beyond that number (even with 0): without
 *    them the model could not use the tools it just called.
 * The stored messages are not changed: the full results stay in the chat (GET /chats/{id}).
 */

/** A stored message as the LLM sees it (tool results truncated to TOOL_RESULT_CONTEXT_MAX_SIZE). */
export function toLlm(config: Config, m: ContextMessage): ChatMessage {
  if (m.role === 'tool')
    return {
      role: 'tool',
      content: truncateForContext(m.content ?? '', config.TOOL_RESULT_CONTEXT_MAX_SIZE),
      tool_call_id: m.tool_call_id ?? '',
    }
  if (m.role === 'assistant' && m.tool_calls !== null && m.tool_calls.length > 0)
    return { role: 'assistant', content: m.content, tool_calls: m.tool_calls }
  return { role: m.role, content: m.content ?? '' }
}

/** What stands in for an older tool result: which call it answered and how long it was. */
export function omittedResult(m: ContextMessage): string {
  return JSON.stringify({
    _omitted: true,
    tool_call_id: m.tool_call_id ?? '',
    characters: (m.content ?? '').length,
    note: 'an older tool result, left out of the context; call the tool again if it is needed',
  })
}

/** The history window (oldest first) as LLM messages. */
export function contextHistory(config: Config, window: readonly ContextMessage[]): ChatMessage[] {
  let start = 0
  while (start < window.length && window[start]?.role === 'tool') start++
  const out: ChatMessage[] = new Array<ChatMessage>(window.length - start)
  let inline = 0
  let trailing = true
  for (let i = window.length - 1; i >= start; i--) {
    const m = window[i] as ContextMessage
    if (m.role !== 'tool') trailing = false
    else if (!trailing && inline >= config.TOOL_RESULT_MAX_INLINE) {
      out[i - start] = { role: 'tool', content: omittedResult(m), tool_call_id: m.tool_call_id ?? '' }
      continue
    } else inline++
    out[i - start] = toLlm(config, m)
  }
  return out
}
