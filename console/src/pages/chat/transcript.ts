/*
 * The chat as the page shows it: stored messages and the live turn folded into one list of items
 * (user bubbles, assistant bubbles made of text and tool-call parts, notices). Pure functions: the
 * page keeps the result in state, the virtual list renders it, the tests of the page read it.
 */
import type { PendingApproval, StoredMessage } from '../work/types.ts'

export type { PendingApproval, StoredMessage }

export type ToolState = 'running' | 'done' | 'awaiting_approval' | 'refused'
export interface ToolPart {
  type: 'tool'
  id: string
  name: string
  arguments: string
  result?: unknown
  state: ToolState
}
export interface TextPart {
  type: 'text'
  text: string
}
export type Part = TextPart | ToolPart

export interface Item {
  key: string
  kind: 'user' | 'assistant' | 'notice'
  parts: Part[]
  /** A notice's tone; an assistant item still streaming. */
  tone?: 'info' | 'error'
  live?: boolean
}

/** The stored history as items: tool results attached to their calls, system messages left out. */
export function itemsOf(messages: StoredMessage[], pending: PendingApproval[] = []): Item[] {
  const items: Item[] = []
  const tools = new Map<string, ToolPart>()
  const waiting = new Set(pending.map((p) => p.tool_call_id))
  for (const m of messages) {
    if (m.role === 'user') items.push({ key: m.id, kind: 'user', parts: [{ type: 'text', text: m.content ?? '' }] })
    else if (m.role === 'assistant') {
      const parts: Part[] = []
      if (m.content !== null && m.content !== '') parts.push({ type: 'text', text: m.content })
      for (const c of m.tool_calls ?? []) {
        const tool: ToolPart = {
          type: 'tool',
          id: c.id,
          name: c.function.name,
          arguments: c.function.arguments,
          state: waiting.has(c.id) ? 'awaiting_approval' : 'running',
        }
        tools.set(c.id, tool)
        parts.push(tool)
      }
      if (parts.length > 0) items.push({ key: m.id, kind: 'assistant', parts })
    } else if (m.role === 'tool' && m.tool_call_id !== null) {
      const tool = tools.get(m.tool_call_id)
      if (tool !== undefined) {
        tool.result = parseMaybe(m.content)
        tool.state = 'done'
      }
    }
  }
  // a call with neither result nor pending approval belongs to a turn that ended without it
  for (const t of tools.values()) if (t.state === 'running' && !waiting.has(t.id)) t.state = 'done'
  return items
}

function parseMaybe(text: string | null): unknown {
  if (text === null) return null
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
  }
}

/** The turn being streamed: what the user sent and what came back so far. */
export interface LiveTurn {
  user: string | null
  parts: Part[]
  status: 'streaming' | 'awaiting_approval' | 'completed' | 'blocked' | 'error' | 'stopped'
  error?: string
  approvals: PendingApproval[]
}

export const newTurn = (user: string | null): LiveTurn => ({ user, parts: [], status: 'streaming', approvals: [] })

const TERMINAL = new Set(['completed', 'blocked', 'error', 'stopped'])
export const isTerminal = (t: LiveTurn) => TERMINAL.has(t.status)

/** One SSE event of a turn applied to it (a new object; the parts array is copied, parts replaced). */
export function applyEvent(turn: LiveTurn, event: string, data: unknown): LiveTurn {
  const d = (typeof data === 'object' && data !== null ? data : {}) as Record<string, unknown>
  const parts = turn.parts.slice()
  switch (event) {
    case 'message': {
      const content = typeof d['content'] === 'string' ? d['content'] : ''
      if (content === '') return turn
      const last = parts.at(-1)
      if (last?.type === 'text') parts[parts.length - 1] = { type: 'text', text: last.text + content }
      else parts.push({ type: 'text', text: content })
      return { ...turn, parts }
    }
    case 'tool_start': {
      const id = String(d['tool_call_id'] ?? '')
      const i = parts.findIndex((p) => p.type === 'tool' && p.id === id)
      const args = typeof d['arguments'] === 'string' ? d['arguments'] : JSON.stringify(d['arguments'] ?? {})
      const tool: ToolPart = { type: 'tool', id, name: String(d['name'] ?? ''), arguments: args, state: 'running' }
      if (i === -1) parts.push(tool)
      else parts[i] = { ...(parts[i] as ToolPart), state: 'running' }
      return { ...turn, parts }
    }
    case 'tool_end': {
      const id = String(d['tool_call_id'] ?? '')
      const i = parts.findIndex((p) => p.type === 'tool' && p.id === id)
      const done: ToolPart = {
        ...(i === -1 ? { type: 'tool', id, name: String(d['name'] ?? ''), arguments: '' } : (parts[i] as ToolPart)),
        result: d['result'],
        state: 'done',
      }
      if (i === -1) parts.push(done)
      else parts[i] = done
      return { ...turn, parts }
    }
    case 'approval_required': {
      const approval = d as unknown as PendingApproval
      const i = parts.findIndex((p) => p.type === 'tool' && p.id === approval.tool_call_id)
      const tool: ToolPart = {
        type: 'tool',
        id: approval.tool_call_id,
        name: `${approval.function_namespace}__${approval.function_name}`,
        arguments: JSON.stringify(approval.arguments ?? {}),
        state: 'awaiting_approval',
      }
      if (i === -1) parts.push(tool)
      else parts[i] = { ...(parts[i] as ToolPart), state: 'awaiting_approval' }
      return { ...turn, parts, approvals: [...turn.approvals, approval] }
    }
    case 'done': {
      const status = String(d['status'] ?? 'completed')
      return {
        ...turn,
        status: status === 'awaiting_approval' ? 'awaiting_approval' : status === 'blocked' ? 'blocked' : 'completed',
      }
    }
    case 'error':
      return {
        ...turn,
        status: 'error',
        error: `${String(d['detail'] ?? 'the turn failed')} (${String(d['code'] ?? 'error')})`,
      }
    default:
      return turn
  }
}

/** The list the page renders: the history, then the live turn (its user message and answer so far). */
export function withLive(history: Item[], turn: LiveTurn | null): Item[] {
  if (turn === null) return history
  const out = history.slice()
  if (turn.user !== null) out.push({ key: 'live-user', kind: 'user', parts: [{ type: 'text', text: turn.user }] })
  if (turn.parts.length > 0 || turn.status === 'streaming')
    out.push({ key: 'live-assistant', kind: 'assistant', parts: turn.parts, live: turn.status === 'streaming' })
  if (turn.status === 'error')
    out.push({
      key: 'live-error',
      kind: 'notice',
      tone: 'error',
      parts: [{ type: 'text', text: turn.error ?? 'error' }],
    })
  if (turn.status === 'stopped')
    out.push({
      key: 'live-stopped',
      kind: 'notice',
      tone: 'info',
      parts: [{ type: 'text', text: 'Stopped. The platform ends the turn once no client listens.' }],
    })
  return out
}
