import type { Static, TObject } from '@sinclair/typebox'
import type { AgentSpec } from '../../schemas/agent.ts'
import type { ChatRow } from '../../schemas/chat.ts'
import type { Principal } from '../auth/principal.ts'
import type { JobState } from '../jobs/job-state.ts'
import type { Config } from '../kernel/config.ts'
import type { Db } from '../platform/db.ts'
import type { Kind } from '../resources/kind.ts'
import type { ResourceRecord, ResourceService } from '../resources/service.ts'
import type { InvokeDeps } from './invoke-deps.ts'

/*
 * The contract of an agent tool, for every feature that offers some (chats' functions, sub-agents
 * and skills; queries, collections, stores, connectors): a provider discovers its tools for a turn
 * (wildcards in enabled_* expanded now, against what the chat's user may read and within the
 * namespaces the agent's owner uses) and runs a call, checking the user's permission again at
 * execution time, never trusting discovery. A feature contributes its providers as `tools` of its
 * Feature object; the chat turn (src/chats/turn-runtime.ts) gets them from the workers role.
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
  /** The namespaces the agent's owner owns or was granted (wildcards expand within them); read once per agent record. */
  ownerNamespaces(agent: AgentRecord): Promise<Set<string>>
  /** Runs a sub-agent turn and returns its final reply (see src/chats/turn.ts). */
  delegate(ctx: ToolContext, agent: AgentRecord, message: string): Promise<string>
  /** Starts a sub-agent turn whose reply resumes this chat later (suspend mode). */
  delegateSuspended(ctx: ToolContext, agent: AgentRecord, message: string, toolCallId: string): Promise<void>
}

/** A feature's tool provider, built once per worker with the worker's deps. */
export type ToolProviderFactory = (d: ToolDeps) => ToolProvider

/** `{ns}__{name}`: `/` is not allowed in tool names. */
export const toolName = (prefix: string, ns: string, name: string): string => `${prefix}${ns}__${name}`

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
  const wildcardNamespaces = hasWildcard ? await d.ownerNamespaces(agent) : undefined
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
