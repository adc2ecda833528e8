import { createHash } from 'node:crypto'
import { lockedTool, lockedToolDeps, resourceToolDescription } from '../feature/locked-tool.ts'
import { expandAndLoad, toolName, type Tool, type ToolDeps, type ToolProvider } from '../feature/tools.ts'
import { mcpServerKind } from '../kinds/mcp-server/kind.ts'
import { mcpServerFor } from './access.ts'
import { callTool, listTools } from './client.ts'
import type { McpDeps, McpServerRecord } from './deps.ts'
import { createSessionCache } from './session.ts'
import { createToolListCache, type McpToolInfo } from './tool-cache.ts'

/*
 * Remote MCP servers' tools as agent tools: `mcp__{ns}__{name}__{tool}` for each tool an agent's
 * `enabled_mcp_servers` entry picks (an empty `tools` list picks all of them), with the tool's
 * input schema. As for connectors: the entry's `parameters` (tool → argument → value) are LOCKED
 * (src/feature/locked-tool.ts). Discovery lists the tools (cached per worker); when a tool runs,
 * the server is loaded again with the chat user's identity and `use` is checked then (mcpServerFor). A server that cannot be listed offers no tools for
 * that turn (logged), the turn goes on. Results: the text content joined; the server's `isError`
 * becomes an `{error}` result; cut at the server's max_result_bytes (marked `truncated`).
 */
const NAME_OK = /^[A-Za-z0-9_-]+$/
const MAX_NAME = 64

/** A tool name the LLM APIs accept (letters, digits, _ and -, at most 64): unusual characters become `_`, a long name keeps a hash of the whole. */
export function mcpToolName(ns: string, name: string, tool: string): string {
  const full = `${toolName('mcp__', ns, name)}__${tool}`
  const safe = full.replace(/[^A-Za-z0-9_-]/g, '_')
  if (safe.length <= MAX_NAME && NAME_OK.test(tool)) return safe
  const hash = createHash('sha256').update(full).digest('hex').slice(0, 8)
  return `${safe.slice(0, MAX_NAME - 9)}_${hash}`
}

const describe = (s: McpServerRecord, t: McpToolInfo): string =>
  resourceToolDescription(t.description !== '' ? t.description : t.name, 'MCP server', s)

export function mcpToolProvider(deps: (t: ToolDeps) => McpDeps): (t: ToolDeps) => ToolProvider {
  return (t) => {
    const d = deps(t)
    return {
      name: 'mcp-servers',
      async discover(ctx): Promise<Tool[]> {
        const entries = ctx.agent.enabled_mcp_servers
        if (entries.length === 0) return []
        const tools: Tool[] = []
        const names = new Set<string>()
        for (const entry of entries) {
          const servers = (await expandAndLoad(t, ctx.principal, ctx.agent, mcpServerKind, [
            entry.server,
          ])) as McpServerRecord[]
          for (const s of servers) {
            let listed: McpToolInfo[]
            try {
              listed = await ctx.blocking(listTools(d, s, ctx.signal, ctx.principal.userId))
            } catch (err) {
              d.log.warn(
                { server: `${s.namespace}/${s.name}`, err: err instanceof Error ? err.message : String(err) },
                'MCP server tools not listed: none offered this turn',
              )
              continue
            }
            const only = entry.tools ?? []
            const picked = only.length === 0 ? listed : listed.filter((x) => only.includes(x.name))
            for (const info of picked) {
              const name = mcpToolName(s.namespace, s.name, info.name)
              if (names.has(name)) continue
              names.add(name)
              tools.push(
                lockedTool({
                  name,
                  description: describe(s, info),
                  schema: info.inputSchema,
                  presets: entry.parameters?.[info.name] ?? {},
                  ref: { namespace: s.namespace, name: s.name },
                  async call(input, runCtx) {
                    const current = await mcpServerFor(d, runCtx.principal, s.namespace, s.name)
                    const out = await runCtx.blocking(
                      callTool(d, current, runCtx.principal.userId, info.name, input, runCtx.signal),
                    )
                    const note = out.truncated ? { truncated: true, max_result_bytes: current.max_result_bytes } : {}
                    return out.isError ? { error: out.text, ...note } : { result: out.text, ...note }
                  },
                }),
              )
            }
          }
        }
        return tools
      },
    }
  }
}

/** The provider with the agent workers' deps (the MCP servers feature's `tools`): caches live as long as the worker. */
export const mcpServerTools = mcpToolProvider((t) => ({
  ...lockedToolDeps(t, 'mcp-servers'),
  toolLists: createToolListCache(),
  sessions: createSessionCache(),
}))
