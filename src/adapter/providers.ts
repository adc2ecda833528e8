import { Type as T, type Static } from '@sinclair/typebox'
import { registerPermission } from '../access/permission-registry.ts'
import { can, type Principal } from '../auth/principal.ts'
import { llmProviderKind } from '../kinds/llm-provider/kind.ts'
import { createLlmClient, providerEntryOf, providerRowFields, type LlmClientOptions, type ProviderEntry } from '../llm/registry.ts'
import type { LlmClient } from '../llm/types.ts'
import { sql, type Db } from '../platform/db.ts'
import { anyRows, rowType } from '../platform/typed-rows.ts'
import type { ResourceService } from '../resources/service.ts'

/*
 * Provider models for the adapter: the active llm_provider resources, kept in memory for a short
 * time (`ttlMs`, default 10 s) so a warm request reads no table, with one LLM client per provider
 * (api_key decrypted once per provider version). A changed, disabled or deleted provider is seen
 * within the TTL by every replica; the price is up to `ttlMs` of the old settings.
 *
 * Direct use of a provider's models (no agent in between) needs
 *   platform.llm.chat:all              every provider (admins hold it through platform.*:all), or
 *   platform.llm/<provider>.chat:all   one provider (`platform.llm/*.chat:all`: any)
 * llm_provider is an admin-only kind, so a caller without either sees no provider model at all.
 */
export const LLM_CHAT_ALL = registerPermission('platform.llm.chat:all', 'LLM: call every provider model directly through the OpenAI adapter (admin)')
registerPermission('platform.llm/{provider}.chat:all', "LLM: call one provider's models directly through the OpenAI adapter")

export const mayUseProvider = (p: Principal, provider: string): boolean => can(p, LLM_CHAT_ALL) || can(p, `platform.llm/${provider}.chat:all`)

export interface AdapterProvider extends ProviderEntry {
  created_at: string
  /** What the provider offers: default_model, then `config.models` (strings), without duplicates. */
  models: string[]
  /** `id@updated_at`: a changed provider (settings or api_key) builds a new client. */
  version: string
}

/* The registry's provider row plus its timestamps (ISO strings, src/platform/db.ts). */
const DirectoryRow = rowType(T.Object({ ...providerRowFields, created_at: T.String(), updated_at: T.String() }, { title: 'llm_provider' }))
type Row = Static<typeof DirectoryRow.schema>

function providerOf(row: Row): AdapterProvider | null {
  const entry = providerEntryOf(row)
  if (entry === null) return null
  const { config } = entry
  const defaultModel = entry.default_model === '' ? null : entry.default_model
  const listed = Array.isArray(config['models']) ? (config['models'] as unknown[]).filter((m): m is string => typeof m === 'string' && m !== '' && m.length <= 300) : []
  return {
    ...entry,
    default_model: defaultModel,
    created_at: row.created_at,
    models: [...new Set([...(defaultModel === null ? [] : [defaultModel]), ...listed])],
    version: `${row.id}@${row.updated_at}`,
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

export function providerDirectory(d: { db: Db; resources: Pick<ResourceService, 'secretsOf'>; ttlMs?: number; clientOptions?: LlmClientOptions }): ProviderDirectory {
  const ttl = d.ttlMs ?? 10_000
  let current: { at: number; byName: Map<string, AdapterProvider> } | null = null
  let loading: Promise<Map<string, AdapterProvider>> | null = null
  const clients = new Map<string, Promise<LlmClient>>()

  const load = async (): Promise<Map<string, AdapterProvider>> => {
    const rows = await anyRows(d.db, DirectoryRow, sql.unsafe`
      select id, name, spec, is_active, created_at, updated_at from resources
      where kind = ${llmProviderKind.kind} and is_active order by name`)
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
        c = d.resources.secretsOf(llmProviderKind, p.id).then((secrets) => createLlmClient({ ...p, api_key: secrets['api_key'] ?? null }, d.clientOptions ?? {}))
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
