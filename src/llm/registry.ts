import { Type as T, type Static } from '@sinclair/typebox'
import { llmProviderKind } from '../kinds/llm-provider/kind.ts'
import type { ResourceRecord, ResourceService } from '../resources/service.ts'
import { createAnthropicClient } from './anthropic.ts'
import { metered } from './metered.ts'
import { createMistralClient } from './mistral.ts'
import { createOllamaClient } from './ollama.ts'
import { createOpenAiClient } from './openai.ts'
import { tracedClient } from './traced-client.ts'
import type { TransportOptions } from './transport.ts'
import { PROVIDER_TYPES } from '../../schemas/llm-provider.ts'
import type { ProviderEntry } from '../../schemas/llm.ts'
import { LlmError, type LlmClient, type ProviderConfig, type ProviderType } from './types.ts'

export type { TransportOptions as LlmClientOptions } from './transport.ts'

/** The client for a provider's wire protocol: its calls counted and timed (metered.ts), each in a span when tracing is on (traced-client.ts). */
export function createLlmClient(provider: ProviderConfig, options: TransportOptions = {}): LlmClient {
  return metered(tracedClient(wireClient(provider, options), provider))
}

function wireClient(provider: ProviderConfig, options: TransportOptions): LlmClient {
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
      throw new LlmError(
        'llm.endpoint_refused',
        `unknown provider type ${String((provider as { provider_type: unknown }).provider_type)}`,
      )
  }
}

// ---------------------------------------------------------------------------------------------
// Resolution

export type { ProviderEntry }

/** The agent fields that choose the provider and model. */
export interface AgentLlmSettings {
  llm_provider_id: string | null
  model: string | null
}

export interface Resolution<P extends ProviderEntry = ProviderEntry> {
  provider: P
  model: string
  /** Set when the agent's own provider is gone or disabled and the default provider stands in: why (for a warning). */
  fallback?: string
}

const byName = <P extends ProviderEntry>(a: P, b: P) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)

/**
 * In order: (1) the agent's llm_provider_id if set; (2) the agent's model with the resolved
 * provider; (3) else the provider's default_model; (4) the system default provider (`is_default`)
 * as the final fallback: when the agent names none, and also when the one it names was deleted or
 * is disabled (`fallback` then says so; the turn logs it at warn). Only when there is no usable
 * default either does it fail: `llm.provider_not_found` for an agent that names a provider,
 * `llm.no_provider` for one that names none.
 */
export function resolveProvider<P extends ProviderEntry>(
  agent: AgentLlmSettings,
  providers: readonly P[],
): Resolution<P> {
  let provider: P | undefined
  let fallback: string | undefined
  if (agent.llm_provider_id !== null) {
    const named = providers.find((p) => p.id === agent.llm_provider_id)
    if (named !== undefined && named.is_active) provider = named
    else
      fallback =
        named === undefined
          ? `the agent's LLM provider ${agent.llm_provider_id} does not exist`
          : `the agent's LLM provider ${named.name} is disabled`
  }
  if (provider === undefined) {
    // Only one provider can carry is_default (an exclusive flag); the name order makes it deterministic anyway.
    provider = providers.filter((p) => p.is_default && p.is_active).sort(byName)[0]
    if (provider === undefined) {
      if (fallback !== undefined)
        throw new LlmError('llm.provider_not_found', `${fallback} and no default provider is configured`)
      throw new LlmError('llm.no_provider', 'the agent names no LLM provider and no default provider is configured')
    }
    if (fallback !== undefined) fallback = `${fallback}: using the default provider ${provider.name}`
  }
  const model = agent.model ?? provider.default_model
  if (model === null || model === '')
    throw new LlmError('llm.no_model', `neither the agent nor the LLM provider ${provider.name} names a model`)
  return fallback === undefined ? { provider, model } : { provider, model, fallback }
}

// ---------------------------------------------------------------------------------------------
// Loading from the provider resources

/** The columns of an llm_provider row of the `resources` table the registry and the adapter's directory read. */
export const ProviderRowSchema = T.Object(
  { id: T.String(), name: T.String(), spec: T.Record(T.String(), T.Unknown()), is_active: T.Boolean() },
  { title: 'llm_provider' },
)
export type ProviderRow = Static<typeof ProviderRowSchema>

/** A provider record of the resource service (its spec fields at the top, the api_key left out) as the registry's row. */
export const providerRowOf = (r: ResourceRecord): ProviderRow => ({
  id: r.id,
  name: r.name,
  spec: r,
  is_active: r.is_active !== false,
})

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
    config:
      typeof s['config'] === 'object' && s['config'] !== null && !Array.isArray(s['config'])
        ? (s['config'] as Record<string, unknown>)
        : {},
    is_default: s['is_default'] === true,
    is_active: row.is_active,
  }
}

function entryOf(row: ProviderRow): ProviderEntry {
  const entry = providerEntryOf(row)
  if (entry === null)
    throw new LlmError(
      'llm.endpoint_refused',
      `LLM provider ${row.name} has unknown provider_type ${String(row.spec['provider_type'])}`,
    )
  return entry
}

/**
 * The providers resolution may pick for an agent: the one it names (if any) and the default ones.
 * From the resource service's rows (in memory, kept coherent across processes: no table read when
 * warm): this is the platform's own lookup on behalf of an agent that was already authorised, not
 * a user listing providers (llm_provider is admin-only).
 */
export async function loadProviderCandidates(
  resources: Pick<ResourceService, 'all'>,
  agent: AgentLlmSettings,
): Promise<ProviderEntry[]> {
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
  const resolved = resolveProvider(agent, await loadProviderCandidates(deps.resources, agent))
  const secrets = await deps.resources.secretsOf(llmProviderKind, resolved.provider.id)
  const client = createLlmClient(
    { ...resolved.provider, api_key: secrets['api_key'] ?? null },
    deps.clientOptions ?? {},
  )
  return { ...resolved, client }
}
