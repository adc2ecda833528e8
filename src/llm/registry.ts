import { Type as T, type Static } from '@sinclair/typebox'
import { llmProviderKind } from '../kinds/llm-provider/kind.ts'
import type { ResourceRecord, ResourceService } from '../resources/service.ts'
import { createAnthropicClient } from './anthropic.ts'
import { createMistralClient } from './mistral.ts'
import { createOllamaClient } from './ollama.ts'
import { createOpenAiClient } from './openai.ts'
import type { TransportOptions } from './transport.ts'
import { PROVIDER_TYPES } from '../../schemas/llm-provider.ts'
import type { ProviderEntry } from '../../schemas/llm.ts'
import { LlmError, type LlmClient, type ProviderConfig, type ProviderType } from './types.ts'

export type { TransportOptions as LlmClientOptions } from './transport.ts'

/** The client for a provider's wire protocol. */
export function createLlmClient(provider: ProviderConfig, options: TransportOptions = {}): LlmClient {
  switch (provider.provider_type) {
    case 'openai':
      return createOpenAiClient(provider, options)
    case 'anthropic':
      return createAnthropicClient(provider, options)
    case 'mistral':
      return createMistralClient(provider, options)
    case 'ollama':
      return createOllamaClient(provider, options)
    default:
      throw new LlmError('llm.endpoint_refused', `unknown provider type ${String((provider as { provider_type: unknown }).provider_type)}`)
  }
}

// ---------------------------------------------------------------------------------------------
// Resolution (SPEC.md §2.1)

export type { ProviderEntry }

/** The agent fields that choose the provider and model. */
export interface AgentLlmSettings {
  llm_provider_id: string | null
  model: string | null
}

export interface Resolution<P extends ProviderEntry = ProviderEntry> {
  provider: P
  model: string
}

/**
 * SPEC.md §2.1, in order: (1) the agent's llm_provider_id if set; (2) the agent's model with that
 * provider; (3) else the provider's default_model; (4) the system default provider (`is_default`)
 * when the agent names none.
 *
 * An agent whose provider id points at a deleted or disabled provider fails with
 * `llm.provider_not_found` instead of falling back to the default: an administrator who pinned an
 * agent to one vendor did not agree to its conversations going to another.
 */
export function resolveProvider<P extends ProviderEntry>(agent: AgentLlmSettings, providers: readonly P[]): Resolution<P> {
  let provider: P | undefined
  if (agent.llm_provider_id !== null) {
    provider = providers.find((p) => p.id === agent.llm_provider_id)
    if (provider === undefined) throw new LlmError('llm.provider_not_found', `the agent's LLM provider ${agent.llm_provider_id} does not exist`)
    if (!provider.is_active) throw new LlmError('llm.provider_not_found', `the agent's LLM provider ${provider.name} is disabled`)
  } else {
    // Only one provider can carry is_default (an exclusive flag); the name order makes it deterministic anyway.
    provider = providers.filter((p) => p.is_default && p.is_active).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))[0]
    if (provider === undefined) throw new LlmError('llm.no_provider', 'the agent names no LLM provider and no default provider is configured')
  }
  const model = agent.model ?? provider.default_model
  if (model === null || model === '') throw new LlmError('llm.no_model', `neither the agent nor the LLM provider ${provider.name} names a model`)
  return { provider, model }
}

// ---------------------------------------------------------------------------------------------
// Loading from the provider resources

/** The columns of an llm_provider row of the `resources` table the registry and the adapter's directory read. */
export const ProviderRowSchema = T.Object({ id: T.String(), name: T.String(), spec: T.Record(T.String(), T.Unknown()), is_active: T.Boolean() }, { title: 'llm_provider' })
export type ProviderRow = Static<typeof ProviderRowSchema>

/** A provider record of the resource service (its spec fields at the top, the api_key left out) as the registry's row. */
export const providerRowOf = (r: ResourceRecord): ProviderRow => ({ id: r.id, name: r.name, spec: r, is_active: r.is_active !== false })

const isProviderType = (v: unknown): v is ProviderType => (PROVIDER_TYPES as readonly unknown[]).includes(v)

/** A provider row as a `ProviderEntry`; null when its provider_type is unknown (the kind validates it, but rows outlive code). */
export function providerEntryOf(row: ProviderRow): ProviderEntry | null {
  const s = row.spec
  const type = s['provider_type']
  if (!isProviderType(type)) return null
  return {
    id: row.id,
    name: row.name,
    provider_type: type,
    api_endpoint: typeof s['api_endpoint'] === 'string' ? s['api_endpoint'] : null,
    default_model: typeof s['default_model'] === 'string' ? s['default_model'] : null,
    config: typeof s['config'] === 'object' && s['config'] !== null && !Array.isArray(s['config']) ? (s['config'] as Record<string, unknown>) : {},
    is_default: s['is_default'] === true,
    is_active: row.is_active,
  }
}

function entryOf(row: ProviderRow): ProviderEntry {
  const entry = providerEntryOf(row)
  if (entry === null) throw new LlmError('llm.endpoint_refused', `LLM provider ${row.name} has unknown provider_type ${String(row.spec['provider_type'])}`)
  return entry
}

/**
 * The providers resolution may pick for an agent: the one it names (if any) and the default ones.
 * From the resource service's rows (in memory, kept coherent across processes: no table read when
 * warm): this is the platform's own lookup on behalf of an agent that was already authorised, not
 * a user listing providers (llm_provider is admin-only).
 */
export async function loadProviderCandidates(resources: Pick<ResourceService, 'all'>, agent: AgentLlmSettings): Promise<ProviderEntry[]> {
  const id = agent.llm_provider_id
  const records = await resources.all(llmProviderKind)
  return records.filter((r) => r.id === id || r.is_default === true).map((r) => entryOf(providerRowOf(r)))
}

export interface LlmResolverDeps {
  resources: Pick<ResourceService, 'secretsOf' | 'all'>
  /** Timeouts and outbound deps for the clients it builds. */
  clientOptions?: TransportOptions
}

export interface ResolvedLlm extends Resolution {
  client: LlmClient
}

/** Resolution against the provider resources, the api_key decrypted, and a client for the chosen provider. */
export async function resolveAgentLlm(deps: LlmResolverDeps, agent: AgentLlmSettings): Promise<ResolvedLlm> {
  const { provider, model } = resolveProvider(agent, await loadProviderCandidates(deps.resources, agent))
  const secrets = await deps.resources.secretsOf(llmProviderKind, provider.id)
  const client = createLlmClient({ ...provider, api_key: secrets['api_key'] ?? null }, deps.clientOptions ?? {})
  return { provider, model, client }
}
