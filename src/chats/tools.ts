import { namespacesUsedBy } from '../resources/namespace-store.ts'
import type { Principal } from '../auth/principal.ts'
import type { Db } from '../platform/db.ts'
import { agentKind } from '../kinds/agent/kind.ts'
import { functionKind } from '../kinds/function/kind.ts'
import { executableFunction } from '../kinds/function/executable.ts'
import { skillKind } from '../kinds/skill/kind.ts'
import { invokeFunction } from '../functions/invoke.ts'
import { validateAgainst } from '../kernel/json-schema.ts'
import { canOnResource } from '../resources/permissions.ts'
import { renderTemplate } from '../templates/render.ts'
import {
  expandAndLoad,
  SUSPENDED,
  toolName,
  type AgentRecord,
  type Tool,
  type ToolContext,
  type ToolDeps,
  type ToolProvider,
  type ToolProviderFactory,
} from '../feature/tools.ts'

/*
 * The chats' own tool providers: functions, sub-agents and skills (system tools are
 * system-tools.ts; turn-runtime.ts adds them). Other features contribute theirs as the `tools` of
 * their Feature object (src/feature/tools.ts is the contract).
 */

/*
 * The namespaces of an agent's owner, read once per turn: a turn loads its agent record once
 * (loadAgent), and the function, agent and skill providers and the preloaded skills all expand
 * against the same record, so the lookup is keyed by that object and dies with it.
 */
const ownerNamespacesByAgent = new WeakMap<AgentRecord, Promise<Set<string>>>()

export function ownerNamespaces(db: Db, agent: AgentRecord): Promise<Set<string>> {
  let found = ownerNamespacesByAgent.get(agent)
  if (found === undefined) {
    found = agent.owner_id === null ? Promise.resolve(new Set<string>()) : namespacesUsedBy(db, agent.owner_id)
    ownerNamespacesByAgent.set(agent, found)
  }
  return found
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

/** The chats' providers, then the other features' (`contributed`: their `tools`, collected by the workers role). */
export function toolProviders(d: ToolDeps, contributed: readonly ToolProviderFactory[]): ToolProvider[] {
  return [functionTools(d), agentTools(d), skillTools(d), ...contributed.map((make) => make(d))]
}

export async function discoverTools(providers: readonly ToolProvider[], ctx: ToolContext): Promise<Map<string, Tool>> {
  const all = (await Promise.all(providers.map((p) => p.discover(ctx)))).flat()
  return new Map(all.map((t) => [t.name, t]))
}
