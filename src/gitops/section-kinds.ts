/*
 * The sections of a document's `spec` and the resource kind each holds, in the order resources
 * are applied when nothing else orders them (what others refer to first: roles before users,
 * providers and connections before the agents and queries on them, functions before triggers).
 * Kind identifiers are each kind's singular `kind` (src/resources/kind.ts), plus the areas that
 * are not generic resources: role, user, dependency, webhook, schedule, database_trigger.
 */
export const sectionKinds = {
  roles: 'role',
  users: 'user',
  llmProviders: 'llm_provider',
  databaseConnections: 'database_connection',
  dependencies: 'dependency',
  secrets: 'secret',
  connectors: 'connector',
  mcpServers: 'mcp_server',
  skills: 'skill',
  components: 'component',
  functions: 'function',
  queries: 'query',
  collections: 'collection',
  templates: 'template',
  stores: 'store',
  manifests: 'manifest',
  agents: 'agent',
  webhooks: 'webhook',
  schedules: 'schedule',
  databaseTriggers: 'database_trigger',
} as const

export type SectionName = keyof typeof sectionKinds

/** The sections a package may not hold: who may log in and what the platform connects to stay the administrator's. */
export const PACKAGE_FORBIDDEN_SECTIONS: readonly SectionName[] = [
  'roles',
  'users',
  'llmProviders',
  'databaseConnections',
]
