import { namespacesUsedBy } from '../resources/namespace-store.ts'
import type { Principal } from '../auth/principal.ts'
import type { Config } from '../kernel/config.ts'
import type { Static, TObject } from '@sinclair/typebox'
import type { AgentSpec } from '../../schemas/agent.ts'
import type { Db } from '../platform/db.ts'
import { agentKind } from '../kinds/agent/kind.ts'
import { functionKind } from '../kinds/function/kind.ts'
import { executableFunction } from '../kinds/function/executable.ts'
import { skillKind } from '../kinds/skill/kind.ts'
import { invokeFunction, type InvokeDeps } from '../functions/invoke.ts'
import { validateAgainst } from '../kernel/json-schema.ts'
import type { JobState } from '../jobs/job-state.ts'
import { canOnResource } from '../resources/permissions.ts'
import type { Kind } from '../resources/kind.ts'
import type { ResourceRecord, ResourceService } from '../resources/service.ts'
import { renderTemplate } from '../templates/render.ts'
import type { ChatRow } from './store.ts'

/*
 * Tools an agent offers the LLM. Each kind of tool is a provider: it discovers its tools for a turn
 * (wildcards in enabled_* expanded now, against what the chat's user may read and within the namespaces the agent's owner uses) and runs a call —
 * checking the user's permission again at execution time, never trusting discovery. Functions,
 * sub-agents and skills live here, system tools in system-tools.ts (turn-runtime.ts adds them);
 * queries, collections, stores and connectors add providers of their own (`registerToolProvider`).
 */
/** A namespaced resource as the engine returns it, typed by its kind's spec (`agent.system_prompt`). */
export type Loaded<S extends TObject> = ResourceRecord<Static<S>> & { namespace: string; owner_id: string | null }
export type AgentRecord = Loaded<typeof AgentSpec>

export interface ToolContext {
  principal: Principal
  chat: ChatRow
  agent: AgentRecord
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
  delegate(ctx: ToolContext, agent: AgentRecord, message: string): Promise<string>
  /** Starts a sub-agent turn whose reply resumes this chat later (suspend mode). */
  delegateSuspended(ctx: ToolContext, agent: AgentRecord, message: string, toolCallId: string): Promise<void>
}

const extra: ((d: ToolDeps) => ToolProvider)[] = []
/** Queries, collections, stores and connectors register their providers here. */
export function registerToolProvider(make: (d: ToolDeps) => ToolProvider): void {
  extra.push(make)
}

/** `{ns}__{name}`: `/` is not allowed in tool names. */
export const toolName = (prefix: string, ns: string, name: string): string => `${prefix}${ns}__${name}`

/*
 * The namespaces of an agent's owner, read once per turn: a turn loads its agent record once
 * (loadAgent), and the function, agent and skill providers and the preloaded skills all expand
 * against the same record, so the lookup is keyed by that object and dies with it.
 */
const ownerNamespacesByAgent = new WeakMap<AgentRecord, Promise<Set<string>>>()

function ownerNamespaces(d: ToolDeps, agent: AgentRecord): Promise<Set<string>> {
  let found = ownerNamespacesByAgent.get(agent)
  if (found === undefined) {
    found = agent.owner_id === null ? Promise.resolve(new Set<string>()) : namespacesUsedBy(d.db, agent.owner_id)
    ownerNamespacesByAgent.set(agent, found)
  }
  return found
}

/**
 * The agent's enabled_* patterns → the resources the chat's user may read (or act on: `actions`). Wildcards only pick
 * resources in namespaces the agent's OWNER owns or was granted: an admin's `tools/*` must not
 * pick up a function a plain user planted in a namespace the admin never granted (it would run
 * with the chatting admin's identity). An agent without an owner expands wildcards to nothing.
 */
export async function expandAndLoad<S extends TObject>(
  d: ToolDeps,
  p: Principal,
  agent: AgentRecord,
  kind: Kind<S>,
  patterns: readonly string[],
  actions?: readonly string[],
): Promise<Loaded<S>[]> {
  if (patterns.length === 0) return []
  const hasWildcard = patterns.some((pat) => pat.includes('*'))
  const wildcardNamespaces = hasWildcard ? await ownerNamespaces(d, agent) : undefined
  const refs = await d.resources.expand(p, kind, patterns, {
    ...(wildcardNamespaces === undefined ? {} : { wildcardNamespaces }),
    ...(actions === undefined ? {} : { actions }),
  })
  if (refs.length === 0) return []
  const records = await d.resources.loadMany(
    kind,
    refs.map((r) => `${r.namespace}/${r.name}`),
  )
  return records.filter((r) => r.is_active !== false) as Loaded<S>[]
}

const objectSchema = (s: unknown): Record<string, unknown> => {
  const o = (s ?? {}) as Record<string, unknown>
  return Object.keys(o).length === 0 ? { type: 'object', properties: {} } : o
}

function functionTools(d: ToolDeps): ToolProvider {
  return {
    name: 'functions',
    async discover(ctx) {
      // offered to a user who may read or execute it (`execute` alone runs it)
      const fns = await expandAndLoad(d, ctx.principal, ctx.agent, functionKind, ctx.agent.enabled_functions, [
        'read',
        'execute',
      ])
      const presets = ctx.agent.function_parameters
      return fns.map((fn): Tool => {
        const ref = `${fn.namespace}/${fn.name}`
        // defaults pre-filled when the agent calls the function; string values are templates over the chat's input
        const defaults = Object.fromEntries(
          Object.entries(presets[ref] ?? {}).map(([k, v]) => [
            k,
            typeof v === 'string' ? renderTemplate(v, ctx.chat.input) : v,
          ]),
        )
        return {
          name: toolName('', fn.namespace, fn.name),
          description: fn.description || `function ${ref}`,
          parameters: objectSchema(fn.input_schema),
          requiresApproval: fn.requires_approval === true,
          ref: { namespace: fn.namespace, name: fn.name },
          async run(args, c) {
            // permission at execution time, on the function as it is now
            const record = await executableFunction(d.resources, c.principal, fn.namespace, fn.name).catch(() => null)
            if (record === null) {
              return { error: `not permitted to execute ${ref}` }
            }
            const input = { ...defaults, ...args }
            const issues = validateAgainst((record['input_schema'] ?? {}) as Record<string, unknown>, input, '')
            if (issues.length > 0)
              return { error: `invalid arguments: ${issues.map((i) => `${i.path || '/'} ${i.message}`).join('; ')}` }
            const out = await c.blocking(
              invokeFunction(d.invoke, c.principal, record, {
                input,
                triggerType: 'agent',
                triggerId: `chat:${c.chat.id}`,
                chatId: c.chat.id,
                parent: { id: c.job.id, depth: c.job.depth },
              }),
            )
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
      const agents = await expandAndLoad(d, ctx.principal, ctx.agent, agentKind, ctx.agent.enabled_agents)
      return agents
        .filter((a) => a.id !== ctx.agent.id)
        .map((a): Tool => ({
          name: toolName('call_agent__', a.namespace, a.name),
          description: `Ask the agent ${a.namespace}/${a.name}: ${a.description}`.trim(),
          parameters: {
            type: 'object',
            properties: { message: { type: 'string', description: 'what to ask the agent' } },
            required: ['message'],
          },
          requiresApproval: false,
          ref: { namespace: a.namespace, name: a.name },
          async run(args, c, call) {
            const max = d.config.AGENT_MAX_DELEGATION_DEPTH
            if (max > 0 && c.delegationDepth + 1 > max)
              return { error: `delegation deeper than AGENT_MAX_DELEGATION_DEPTH (${String(max)})` }
            if (
              !canOnResource(c.principal, agentKind, 'chat', {
                namespace: a.namespace,
                name: a.name,
                ownerId: a.owner_id,
              })
            )
              return { error: `not permitted to call ${a.namespace}/${a.name}` }
            const message = typeof args['message'] === 'string' ? args['message'] : JSON.stringify(args)
            if (d.config.AGENT_DELEGATE_MODE === 'suspend') {
              await d.delegateSuspended(c, a, message, call.id)
              return SUSPENDED
            }
            return { reply: await d.delegate(c, a, message) }
          },
        }))
    },
  }
}

export interface SkillContent {
  namespace: string
  name: string
  content: string
}

/** Skills enabled with preload: their content goes into the system prompt. */
export async function preloadedSkills(d: ToolDeps, p: Principal, agent: AgentRecord): Promise<SkillContent[]> {
  const entries = agent.enabled_skills
  const patterns = entries
    .filter((e) => typeof e !== 'string' && e.preload === true)
    .map((e) => (e as { skill: string }).skill)
  return (await expandAndLoad(d, p, agent, skillKind, patterns)).map((s) => ({
    namespace: s.namespace,
    name: s.name,
    content: s.content,
  }))
}

function skillTools(d: ToolDeps): ToolProvider {
  return {
    name: 'skills',
    async discover(ctx) {
      const entries = ctx.agent.enabled_skills
      const patterns = entries
        .filter((e) => typeof e === 'string' || e.preload !== true)
        .map((e) => (typeof e === 'string' ? e : e.skill))
      const skills = await expandAndLoad(d, ctx.principal, ctx.agent, skillKind, patterns)
      return skills.map((s): Tool => ({
        name: toolName('get_skill__', s.namespace, s.name),
        description: `Instructions: ${s.description || `${s.namespace}/${s.name}`}`,
        parameters: { type: 'object', properties: {} },
        requiresApproval: false,
        ref: { namespace: s.namespace, name: s.name },
        async run(_args, c) {
          const record = await d.resources
            .get(c.principal, skillKind, { namespace: s.namespace, name: s.name })
            .catch(() => null)
          return record === null
            ? { error: `skill ${s.namespace}/${s.name} is not available` }
            : { content: record['content'] }
        },
      }))
    },
  }
}

export function toolProviders(d: ToolDeps): ToolProvider[] {
  return [functionTools(d), agentTools(d), skillTools(d), ...extra.map((make) => make(d))]
}

export async function discoverTools(providers: readonly ToolProvider[], ctx: ToolContext): Promise<Map<string, Tool>> {
  const all = (await Promise.all(providers.map((p) => p.discover(ctx)))).flat()
  return new Map(all.map((t) => [t.name, t]))
}
