import type { ToolCall } from '../llm/types.ts'
import { runTool, storedResult } from './run-tool.ts'
import { SUSPENDED, type Tool, type ToolContext } from '../feature/tools.ts'
import type { Emit } from './turn.ts'
import type { Transcript } from './transcript.ts'
import type { TurnRuntime } from './turn-runtime.ts'

/** Runs a round's calls in parallel, adding each result to the transcript; answers how many suspended (their sub-agent answers later). */
export async function runToolCalls(
  rt: TurnRuntime,
  ctx: ToolContext,
  tools: ReadonlyMap<string, Tool>,
  calls: readonly ToolCall[],
  emit: Emit,
  tx: Transcript,
): Promise<number> {
  let suspended = 0
  await Promise.all(
    calls.map(async (call) => {
      const tool = tools.get(call.function.name)
      await emit('tool_start', {
        tool_call_id: call.id,
        name: call.function.name,
        arguments: call.function.arguments,
        description: tool?.description ?? '',
      })
      const result =
        tool === undefined ? { error: `unknown tool ${call.function.name}` } : await runTool(tool, call, ctx)
      if (result === SUSPENDED) {
        // the reply is appended (and tool_end sent) when the sub-agent answers
        suspended++
        return
      }
      // written with the turn's next batch (the reply, or the next round's tool calls)
      tx.add({
        role: 'tool',
        content: storedResult(rt.d.config, result),
        tool_call_id: call.id,
        name: call.function.name,
      })
      await emit('tool_end', { tool_call_id: call.id, name: call.function.name, result })
    }),
  )
  return suspended
}

/** Records the calls that need the user's approval and announces them (`approval_required` each). */
export async function requestApprovals(
  rt: TurnRuntime,
  ctx: ToolContext,
  tools: ReadonlyMap<string, Tool>,
  waiting: readonly ToolCall[],
  emit: Emit,
): Promise<void> {
  for (const call of waiting) {
    const tool = tools.get(call.function.name) as Tool
    let args: Record<string, unknown> = {}
    try {
      const parsed: unknown = JSON.parse(call.function.arguments || '{}')
      // an approval's arguments are an object (schemas/chat.ts Approval, checked when read back)
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
        args = parsed as Record<string, unknown>
    } catch {
      // shown as empty arguments; the approval decides
    }
    const approval = {
      tool_call_id: call.id,
      function_namespace: tool.ref?.namespace ?? '',
      function_name: tool.ref?.name ?? call.function.name,
      arguments: args,
    }
    await rt.store.addApproval(ctx.chat.id, approval)
    await emit('approval_required', approval)
  }
}
