import { createHash } from 'node:crypto'
import { toolName, type Tool, type ToolContext, type ToolDeps, type ToolProvider } from '../feature/tools.ts'
import { createSecretBox, previousKeys } from '../kernel/crypto.ts'
import { AppError } from '../kernel/errors.ts'
import { createLogger, logLevelOf } from '../kernel/log.ts'
import { mcpServerKind } from '../kinds/mcp-server/kind.ts'
import { renderTemplate } from '../templates/render.ts'
import { mcpServerFor } from './access.ts'
import { callTool, listTools } from './client.ts'
import type { McpDeps, McpServerRecord } from './deps.ts'
import { createSessionCache } from './session.ts'
import { createToolListCache, type McpToolInfo } from './tool-cache.ts'

/*
 * Remote MCP servers' tools as agent tools: `mcp__{ns}__{name}__{tool}` for each tool an agent's
 * `enabled_mcp_servers` entry picks (an empty `tools` list picks all of them), with the tool's
 * input schema. As for connectors (src/connectors/tools.ts): the entry's `parameters` (tool →
 * argument → value; strings are templates over the chat input) are LOCKED — removed from the
 * schema the LLM sees, dropped from what it sends, always injected. Discovery lists the tools
 * (cached per worker); when a tool runs, the server is loaded again with the chat user's identity
 * and `use` is checked then (mcpServerFor). A server that cannot be listed offers no tools for
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

function visibleSchema(schema: Record<string, unknown>, locked: ReadonlySet<string>): Record<string, unknown> {
  const out: Record<string, unknown> = structuredClone(schema)
  const props = (out['properties'] ?? {}) as Record<string, unknown>
  for (const k of locked) delete props[k]
  out['type'] = 'object'
  out['properties'] = props
  if (Array.isArray(out['required'])) {
    const req = (out['required'] as unknown[]).filter((r) => typeof r === 'string' && !locked.has(r))
    if (req.length > 0) out['required'] = req
    else delete out['required']
  }
  return out
}

function describe(s: McpServerRecord, t: McpToolInfo): string {
  const what = t.description !== '' ? t.description : t.name
  return `${what} (MCP server ${s.namespace}/${s.name}${s.description === '' ? '' : `: ${s.description}`})`.slice(
    0,
    1024,
  )
}

export function mcpToolProvider(deps: (t: ToolDeps) => McpDeps): (t: ToolDeps) => ToolProvider {
  return (t) => {
    const d = deps(t)
    return {
      name: 'mcp-servers',
      async discover(ctx: ToolContext): Promise<Tool[]> {
        const entries = ctx.agent.enabled_mcp_servers
        if (entries.length === 0) return []
        const tools: Tool[] = []
        const names = new Set<string>()
        for (const entry of entries) {
          const refs = await (async () => {
            const wildcard = entry.server.includes('*')
            const within = wildcard ? await t.ownerNamespaces(ctx.agent) : undefined
            return t.resources.expand(
              ctx.principal,
              mcpServerKind,
              [entry.server],
              within === undefined ? {} : { wildcardNamespaces: within },
            )
          })()
          if (refs.length === 0) continue
          const servers = (await t.resources.loadMany(
            mcpServerKind,
            refs.map((r) => `${r.namespace}/${r.name}`),
          )) as McpServerRecord[]
          for (const s of servers) {
            if (s.is_active === false) continue
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
              const presets = entry.parameters?.[info.name] ?? {}
              const locked = new Set(Object.keys(presets))
              tools.push({
                name,
                description: describe(s, info),
                parameters: visibleSchema(info.inputSchema, locked),
                requiresApproval: false,
                ref: { namespace: s.namespace, name: s.name },
                async run(args, runCtx) {
                  try {
                    const fixed = Object.fromEntries(
                      Object.entries(presets).map(([k, v]) => [
                        k,
                        typeof v === 'string' ? renderTemplate(v, runCtx.chat.input) : v,
                      ]),
                    )
                    const input = {
                      ...Object.fromEntries(Object.entries(args).filter(([k]) => !locked.has(k))),
                      ...fixed,
                    }
                    const current = await mcpServerFor(d, runCtx.principal, s.namespace, s.name)
                    const out = await runCtx.blocking(
                      callTool(d, current, runCtx.principal.userId, info.name, input, runCtx.signal),
                    )
                    const note = out.truncated ? { truncated: true, max_result_bytes: current.max_result_bytes } : {}
                    return out.isError ? { error: out.text, ...note } : { result: out.text, ...note }
                  } catch (err) {
                    if (err instanceof AppError) return { error: err.message, code: err.code }
                    throw err
                  }
                },
              })
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
  db: t.db,
  config: t.config,
  resources: t.resources,
  box: createSecretBox(t.config.ENCRYPTION_KEY, previousKeys(t.config.ENCRYPTION_KEY_PREVIOUS)),
  log: createLogger({ level: logLevelOf(t.config), svc: 'mcp-servers' }),
  toolLists: createToolListCache(),
  sessions: createSessionCache(),
}))
