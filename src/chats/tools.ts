import { namespacesUsedBy } from '../namespaces/store.ts'
import type { Principal } from '../auth/principal.ts'
import type { Config } from '../kernel/config.ts'
import type { Db } from '../platform/db.ts'
import { sql } from '../platform/db.ts'
import { agentKind } from '../kinds/agent/kind.ts'
import { functionKind } from '../kinds/function/kind.ts'
import { skillKind } from '../kinds/skill/kind.ts'
import { invokeFunction, type InvokeDeps } from '../functions/invoke.ts'
import { validateAgainst } from '../functions/json-schema.ts'
import type { JobState } from '../jobs/job-state.ts'
import { canOnResource } from '../resources/permissions.ts'
import type { AnyKind } from '../resources/kind.ts'
import type { ResourceService } from '../resources/service.ts'
import { renderTemplate } from '../templates/render.ts'
import type { ChatRow } from './store.ts'

/*
 * Tools an agent offers the LLM. Each kind of tool is a provider: it discovers its tools for a turn
 * (wildcards in enabled_* expanded now, against what the chat's user may read and within the namespaces the agent's owner uses) and runs a call —
 * checking the user's permission again at execution time, never trusting discovery. Functions,
 * sub-agents, skills and system tools live here; queries, collections, stores and connectors add
 * providers of their own (`registerToolProvider`).
 */
export interface AgentSpecLike {
  id: string
  namespace: string
  name: string
  spec: Record<string, unknown>
  owner_id: string | null
}

export interface ToolContext {
  principal: Principal
  chat: ChatRow
  agent: AgentSpecLike
  /** The turn's job: parent of every execution a tool starts. */
  job: JobState
  /** Delegation depth of this turn (0 for a user's chat). */
  delegationDepth: number
  signal: AbortSignal
  /** Lets the worker lend the waiting slot to other jobs while a tool waits (no deadlock). */
  blocking<T>(p: Promise<T>): Promise<T>
}

export interface Tool {
  name: string
  description: string
  parameters: Record<string, unknown>
  requiresApproval: boolean
  /** The resource behind the tool, for approvals and events. */
  ref?: { namespace: string; name: string }
  run(args: Record<string, unknown>, ctx: ToolContext, call: { id: string }): Promise<unknown>
}

/**
 * What a tool answers when its result comes later (a sub-agent under AGENT_DELEGATE_MODE=suspend):
 * the turn stores no result for that call and ends `suspended`; the result is appended when it
 * arrives and the turn resumes.
 */
export const SUSPENDED = Symbol('suspended')

export interface ToolProvider {
  name: string
  discover(ctx: ToolContext): Promise<Tool[]>
}

export interface ToolDeps {
  db: Db
  config: Config
  resources: ResourceService
  invoke: InvokeDeps
  /** Runs a sub-agent turn and returns its final reply (see turn.ts). */
  delegate(ctx: ToolContext, agent: AgentSpecLike, message: string): Promise<string>
  /** Starts a sub-agent turn whose reply resumes this chat later (suspend mode). */
  delegateSuspended(ctx: ToolContext, agent: AgentSpecLike, message: string, toolCallId: string): Promise<void>
}

const extra: ((d: ToolDeps) => ToolProvider)[] = []
/** Queries, collections, stores and connectors register their providers here. */
export function registerToolProvider(make: (d: ToolDeps) => ToolProvider): void {
  extra.push(make)
}

/** `{ns}__{name}`: `/` is not allowed in tool names (WIRE.md). */
export const toolName = (prefix: string, ns: string, name: string): string => `${prefix}${ns}__${name}`

interface Loaded {
  id: string
  namespace: string
  name: string
  spec: Record<string, unknown>
  owner_id: string | null
}

/**
 * The agent's enabled_* patterns → the resources the chat's user may read. Wildcards only pick
 * resources in namespaces the agent's OWNER owns or was granted: an admin's `tools/*` must not
 * pick up a function a plain user planted in a namespace the admin never granted (it would run
 * with the chatting admin's identity). An agent without an owner expands wildcards to nothing.
 */
async function expandAndLoad(d: ToolDeps, p: Principal, agent: AgentSpecLike, kind: AnyKind, patterns: string[]): Promise<Loaded[]> {
  if (patterns.length === 0) return []
  const hasWildcard = patterns.some((pat) => pat.includes('*'))
  const wildcardNamespaces = !hasWildcard ? undefined : agent.owner_id === null ? new Set<string>() : await namespacesUsedBy(d.db, agent.owner_id)
  const refs = await d.resources.expand(p, kind, patterns, wildcardNamespaces === undefined ? {} : { wildcardNamespaces })
  if (refs.length === 0) return []
  const keys = refs.map((r) => `${r.namespace}/${r.name}`)
  const rows = await d.db.any(sql.unsafe`select id, namespace, name, spec, owner_id from resources where kind = ${kind.kind} and is_active and (namespace || '/' || name) = any(${sql.array(keys, 'text')})`)
  return rows as unknown as Loaded[]
}

const objectSchema = (s: unknown): Record<string, unknown> => {
  const o = (s ?? {}) as Record<string, unknown>
  return Object.keys(o).length === 0 ? { type: 'object', properties: {} } : o
}

function functionTools(d: ToolDeps): ToolProvider {
  return {
    name: 'functions',
    async discover(ctx) {
      const fns = await expandAndLoad(d, ctx.principal, ctx.agent, functionKind, (ctx.agent.spec['enabled_functions'] as string[] | undefined) ?? [])
      const presets = (ctx.agent.spec['function_parameters'] ?? {}) as Record<string, Record<string, unknown>>
      return fns.map((fn): Tool => {
        const ref = `${fn.namespace}/${fn.name}`
        // defaults pre-filled when the agent calls the function; string values are templates over the chat's input
        const defaults = Object.fromEntries(Object.entries(presets[ref] ?? {}).map(([k, v]) => [k, typeof v === 'string' ? renderTemplate(v, ctx.chat.input) : v]))
        return {
          name: toolName('', fn.namespace, fn.name),
          description: String(fn.spec['description'] ?? '') || `function ${ref}`,
          parameters: objectSchema(fn.spec['input_schema']),
          requiresApproval: fn.spec['requires_approval'] === true,
          ref: { namespace: fn.namespace, name: fn.name },
          async run(args, c) {
            // permission at execution time, on the function as it is now
            const record = await d.resources.get(c.principal, functionKind, { namespace: fn.namespace, name: fn.name }).catch(() => null)
            if (record === null || !canOnResource(c.principal, functionKind, 'execute', { namespace: fn.namespace, name: fn.name, ownerId: (record['owner_id'] as string | null) ?? null })) {
              return { error: `not permitted to execute ${ref}` }
            }
            const input = { ...defaults, ...args }
            const issues = validateAgainst((record['input_schema'] ?? {}) as Record<string, unknown>, input, '')
            if (issues.length > 0) return { error: `invalid arguments: ${issues.map((i) => `${i.path || '/'} ${i.message}`).join('; ')}` }
            const out = await c.blocking(invokeFunction(d.invoke, c.principal, record, { input, triggerType: 'agent', triggerId: `chat:${c.chat.id}`, chatId: c.chat.id, parent: { id: c.job.id, depth: c.job.depth } }))
            return out.status === 'success' ? out.result : { error: out.error }
          },
        }
      })
    },
  }
}

function agentTools(d: ToolDeps): ToolProvider {
  return {
    name: 'agents',
    async discover(ctx) {
      const agents = await expandAndLoad(d, ctx.principal, ctx.agent, agentKind, (ctx.agent.spec['enabled_agents'] as string[] | undefined) ?? [])
      return agents
        .filter((a) => a.id !== ctx.agent.id)
        .map(
          (a): Tool => ({
            name: toolName('call_agent__', a.namespace, a.name),
            description: `Ask the agent ${a.namespace}/${a.name}: ${String(a.spec['description'] ?? '')}`.trim(),
            parameters: { type: 'object', properties: { message: { type: 'string', description: 'what to ask the agent' } }, required: ['message'] },
            requiresApproval: false,
            ref: { namespace: a.namespace, name: a.name },
            async run(args, c, call) {
              const max = d.config.AGENT_MAX_DELEGATION_DEPTH
              if (max > 0 && c.delegationDepth + 1 > max) return { error: `delegation deeper than AGENT_MAX_DELEGATION_DEPTH (${String(max)})` }
              if (!canOnResource(c.principal, agentKind, 'chat', { namespace: a.namespace, name: a.name, ownerId: a.owner_id })) return { error: `not permitted to call ${a.namespace}/${a.name}` }
              const message = typeof args['message'] === 'string' ? args['message'] : JSON.stringify(args)
              if (d.config.AGENT_DELEGATE_MODE === 'suspend') {
                await d.delegateSuspended(c, a, message, call.id)
                return SUSPENDED
              }
              return { reply: await d.delegate(c, a, message) }
            },
          }),
        )
    },
  }
}

export interface SkillContent {
  namespace: string
  name: string
  content: string
}

/** Skills enabled with preload: their content goes into the system prompt. */
export async function preloadedSkills(d: ToolDeps, p: Principal, agent: AgentSpecLike): Promise<SkillContent[]> {
  const entries = (agent.spec['enabled_skills'] ?? []) as (string | { skill: string; preload?: boolean })[]
  const patterns = entries.filter((e) => typeof e !== 'string' && e.preload === true).map((e) => (e as { skill: string }).skill)
  return (await expandAndLoad(d, p, agent, skillKind, patterns)).map((s) => ({ namespace: s.namespace, name: s.name, content: String(s.spec['content'] ?? '') }))
}

function skillTools(d: ToolDeps): ToolProvider {
  return {
    name: 'skills',
    async discover(ctx) {
      const entries = (ctx.agent.spec['enabled_skills'] ?? []) as (string | { skill: string; preload?: boolean })[]
      const patterns = entries.filter((e) => typeof e === 'string' || e.preload !== true).map((e) => (typeof e === 'string' ? e : e.skill))
      const skills = await expandAndLoad(d, ctx.principal, ctx.agent, skillKind, patterns)
      return skills.map(
        (s): Tool => ({
          name: toolName('get_skill__', s.namespace, s.name),
          description: `Instructions: ${String(s.spec['description'] ?? `${s.namespace}/${s.name}`)}`,
          parameters: { type: 'object', properties: {} },
          requiresApproval: false,
          ref: { namespace: s.namespace, name: s.name },
          async run(_args, c) {
            const record = await d.resources.get(c.principal, skillKind, { namespace: s.namespace, name: s.name }).catch(() => null)
            return record === null ? { error: `skill ${s.namespace}/${s.name} is not available` } : { content: record['content'] }
          },
        }),
      )
    },
  }
}

/** Platform capabilities named in `system_tools`. */
const SYSTEM_TOOLS: Record<string, Omit<Tool, 'name'>> = {
  current_time: {
    description: 'The current date and time (UTC, ISO 8601)',
    parameters: { type: 'object', properties: {} },
    requiresApproval: false,
    run: async () => ({ now: new Date().toISOString() }),
  },
}

function systemTools(): ToolProvider {
  return {
    name: 'system',
    async discover(ctx) {
      const names = ((ctx.agent.spec['system_tools'] ?? []) as (string | { name: string })[]).map((e) => (typeof e === 'string' ? e : e.name))
      return names.filter((n) => n in SYSTEM_TOOLS).map((n) => ({ name: n, ...(SYSTEM_TOOLS[n] as Omit<Tool, 'name'>) }))
    },
  }
}

export function toolProviders(d: ToolDeps): ToolProvider[] {
  return [functionTools(d), agentTools(d), skillTools(d), systemTools(), ...extra.map((make) => make(d))]
}

export async function discoverTools(providers: readonly ToolProvider[], ctx: ToolContext): Promise<Map<string, Tool>> {
  const all = (await Promise.all(providers.map((p) => p.discover(ctx)))).flat()
  return new Map(all.map((t) => [t.name, t]))
}
