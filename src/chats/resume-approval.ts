import { discoverTools } from './tools.ts'
import { type ToolContext } from '../feature/tools.ts'
import { runTool, storedResult } from './run-tool.ts'
import { TurnError } from './turn-error.ts'
import type { Transcript } from './transcript.ts'
import type { TurnRuntime } from './turn-runtime.ts'

/** After POST /chats/{id}/approve-tool: runs (or rejects) the waiting call and stores its result. */
export async function resumeApproval(
  rt: TurnRuntime,
  ctx: ToolContext,
  a: { tool_call_id: string; approved: boolean },
  tx: Transcript,
): Promise<void> {
  const { store } = rt
  const history = await store.messages(ctx.chat.id, 50)
  const call = history.flatMap((m) => m.tool_calls ?? []).find((c) => c.id === a.tool_call_id)
  if (call === undefined) throw new TurnError('chat.approval_unknown', `no tool call ${a.tool_call_id} in this chat`)
  let result: unknown
  if (!a.approved) result = { error: 'the user rejected this tool call' }
  else {
    const tools = await discoverTools(rt.providers, ctx)
    const tool = tools.get(call.function.name)
    result =
      tool === undefined
        ? { error: `tool ${call.function.name} is no longer available` }
        : await runTool(tool, call, ctx)
  }
  tx.add({ role: 'tool', content: storedResult(rt.d.config, result), tool_call_id: call.id, name: call.function.name })
}
