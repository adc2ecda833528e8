import type { Config } from '../kernel/config.ts'
import type { ToolCall } from '../llm/types.ts'
import type { Tool, ToolContext } from '../feature/tools.ts'
import { truncateForContext } from './truncate.ts'

/** One tool call: its arguments parsed, any failure (bad JSON, a throwing tool) as an `{error}` result for the model. */
export async function runTool(tool: Tool, call: ToolCall, ctx: ToolContext): Promise<unknown> {
  let args: Record<string, unknown>
  try {
    const parsed = JSON.parse(call.function.arguments === '' ? '{}' : call.function.arguments) as unknown
    args =
      parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {}
  } catch {
    return { error: 'the arguments were not valid JSON' }
  }
  try {
    return await tool.run(args, ctx, { id: call.id })
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) }
  }
}

/** A tool result as the stored tool message (truncated beyond TOOL_RESULT_MAX_SIZE). */
export function storedResult(config: Config, result: unknown): string {
  const text = typeof result === 'string' ? result : JSON.stringify(result ?? null)
  const max = config.TOOL_RESULT_MAX_SIZE
  return Buffer.byteLength(text) <= max ? text : truncateForContext(result, max)
}
