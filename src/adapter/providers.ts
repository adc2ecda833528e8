import { permissionSet } from '../feature/permissions.ts'
import { can, type Principal } from '../auth/principal.ts'
import { llmProviderKind } from '../kinds/llm-provider/kind.ts'
import {
  createLlmClient,
  providerEntryOf,
  providerRowOf,
  type LlmClientOptions,
  type ProviderEntry,
} from '../llm/registry.ts'
import type { LlmClient } from '../llm/types.ts'
import type { ResourceRecord, ResourceService } from '../resources/service.ts'

/** The permissions this module checks, for the reference (its feature contributes the list). */
export const adapterPermissions = permissionSet()

/*
 * Provider models for the adapter: the active llm_provider resources, from the resource service's
 * row cache (memory, coherent across processes), mapped to providers once per `ttlMs` (default
 * 10 s) so a warm request does no per-row work, with one LLM client per provider (api_key
 * decrypted once per provider version). A changed, disabled or deleted provider is seen within the
 * TTL by every replica; the price is up to `ttlMs` of the old settings.
 *
 * Direct use of a provider's models (no agent in between) needs
 *   platform.llm.chat:all              every provider (admins hold it through platform.*:all), or
 *   platform.llm/<provider>.chat:all   one provider (`platform.llm/*.chat:all`: any)
 * llm_provider is an admin-only kind, so a caller without either sees no provider model at all.
 */
export const LLM_CHAT_ALL = adapterPermissions.add(
  'platform.llm.chat:all',
  'LLM: call every provider model directly through the OpenAI adapter (admin)',
)
adapterPermissions.add(
  'platform.llm/{provider}.chat:all',
  "LLM: call one provider's models directly through the OpenAI adapter",
)

export const mayUseProvider = (p: Principal, provider: string): boolean =>
  can(p, LLM_CHAT_ALL) || can(p, `platform.llm/${provider}.chat:all`)

export interface AdapterProvider extends ProviderEntry {
  created_at: string
  /** What the provider offers: default_model, then `config.models` (strings), without duplicates. */
  models: string[]
  /** `id@updated_at`: a changed provider (settings or api_key) builds a new client. */
  version: string
}

/* A provider record of the resource service (from its row cache), timestamps as ISO strings. */
function providerOf(row: ResourceRecord): AdapterProvider | null {
  const entry = providerEntryOf(providerRowOf(row))
  if (entry === null) return null
  const { config } = entry
  const defaultModel = entry.default_model === '' ? null : entry.default_model
  const listed = Array.isArray(config['models'])
    ? (config['models'] as unknown[]).filter((m): m is string => typeof m === 'string' && m !== '' && m.length <= 300)
    : []
  return {
    ...entry,
    default_model: defaultModel,
    created_at: String(row['created_at']),
    models: [...new Set([...(defaultModel === null ? [] : [defaultModel]), ...listed])],
    version: `${row.id}@${String(row['updated_at'])}`,
  }
}

export interface ProviderDirectory {
  /** Active providers by name (from memory while fresh). */
  all(): Promise<ReadonlyMap<string, AdapterProvider>>
  /** The client of a provider (built once per provider version). */
  client(p: AdapterProvider): Promise<LlmClient>
  /** Forget everything (tests; after a known change). */
  invalidate(): void
}

export function providerDirectory(d: {
  resources: Pick<ResourceService, 'secretsOf' | 'all'>
  ttlMs?: number
  clientOptions?: LlmClientOptions
}): ProviderDirectory {
  const ttl = d.ttlMs ?? 10_000
  let current: { at: number; byName: Map<string, AdapterProvider> } | null = null
  let loading: Promise<Map<string, AdapterProvider>> | null = null
  const clients = new Map<string, Promise<LlmClient>>()

  const load = async (): Promise<Map<string, AdapterProvider>> => {
    // by name (named kind), inactive ones left out
    const rows = (await d.resources.all(llmProviderKind)).filter((r) => r.is_active !== false)
    const byName = new Map<string, AdapterProvider>()
    for (const r of rows) {
      const p = providerOf(r)
      if (p !== null) byName.set(p.name, p)
    }
    // clients of versions that are gone are dropped
    const live = new Set([...byName.values()].map((p) => p.version))
    for (const k of clients.keys()) if (!live.has(k)) clients.delete(k)
    current = { at: performance.now(), byName }
    return byName
  }

  return {
    async all() {
      if (current !== null && performance.now() - current.at < ttl) return current.byName
      loading ??= load().finally(() => {
        loading = null
      })
      return loading
    },
    client(p) {
      let c = clients.get(p.version)
      if (c === undefined) {
        c = d.resources
          .secretsOf(llmProviderKind, p.id)
          .then((secrets) => createLlmClient({ ...p, api_key: secrets['api_key'] ?? null }, d.clientOptions ?? {}))
        c.catch(() => clients.delete(p.version))
        clients.set(p.version, c)
      }
      return c
    },
    invalidate() {
      current = null
      clients.clear()
    },
  }
}
