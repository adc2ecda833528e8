import { RESOURCE_KINDS, type ResourceKindInfo } from '../../api/types.generated.ts'

/*
 * The resource kinds the generic pages cover: every kind of the platform (generated from
 * defineKind), plus the trigger resources that have routes of their own but the same
 * list/get/create/update/delete shape (schedules, webhooks, database triggers).
 */
export interface ResourceInfo extends ResourceKindInfo {
  /** The list/create path under /api/v1. */
  base: string
  /** The record field that addresses one resource in URLs (`name`, or `path` for webhooks). */
  key: string
  /** The field a named kind is changed by (`id` for llm-providers, the key otherwise). */
  changeKey: string
  area: string
  /** The title of the list page. */
  listTitle: string
}

const AREAS: Record<string, string> = {
  agents: 'Build',
  functions: 'Build',
  skills: 'Build',
  templates: 'Build',
  components: 'Build',
  manifests: 'Build',
  'llm-providers': 'Integrations',
  connectors: 'Integrations',
  'mcp-servers': 'Integrations',
  secrets: 'Integrations',
  stores: 'Data',
  queries: 'Data',
  'database-connections': 'Data',
  collections: 'Data',
  schedules: 'Triggers',
  webhooks: 'Triggers',
  'database-triggers': 'Triggers',
}

const TITLES: Record<string, string> = {
  'llm-providers': 'LLM providers',
  'mcp-servers': 'MCP servers',
  'database-connections': 'Database connections',
  'database-triggers': 'Database triggers',
}

const listTitle = (plural: string): string => {
  const t = TITLES[plural]
  if (t !== undefined) return t
  const words = plural.replace(/-/g, ' ')
  return words.charAt(0).toUpperCase() + words.slice(1)
}

const TRIGGERS: ResourceKindInfo[] = [
  {
    kind: 'schedule',
    plural: 'schedules',
    title: 'Schedule',
    description: 'Runs an agent or a function on a cron expression or an interval.',
    addressing: 'named',
    updateMethod: 'PATCH',
    adminOnly: false,
    secrets: [],
    versioned: false,
  },
  {
    kind: 'webhook',
    plural: 'webhooks',
    title: 'Webhook',
    description: 'An HTTP endpoint that runs an agent or a function when called.',
    addressing: 'named',
    updateMethod: 'PATCH',
    adminOnly: false,
    secrets: [],
    versioned: false,
  },
  {
    kind: 'db-trigger',
    plural: 'database-triggers',
    title: 'Database trigger',
    description: 'Polls a database connection for new or changed rows and runs a function for them.',
    addressing: 'named',
    updateMethod: 'PATCH',
    adminOnly: false,
    secrets: [],
    versioned: false,
  },
]

export const RESOURCES: readonly ResourceInfo[] = [...RESOURCE_KINDS, ...TRIGGERS].map((k) => ({
  ...k,
  base: `/${k.plural}`,
  key: k.plural === 'webhooks' ? 'path' : 'name',
  // named kinds of the engine are changed by id (src/resources/routes.ts); the triggers by their key
  changeKey: k.addressing === 'named' && !TRIGGERS.includes(k) ? 'id' : k.plural === 'webhooks' ? 'path' : 'name',
  area: AREAS[k.plural] ?? 'Resources',
  listTitle: listTitle(k.plural),
}))

export function resourceInfo(plural: string): ResourceInfo {
  const r = RESOURCES.find((k) => k.plural === plural)
  if (r === undefined) throw new Error(`no resource kind ${plural}`)
  return r
}

/** The console path of one resource's page (and its `/edit`). */
export function resourcePath(r: ResourceInfo, row: Record<string, unknown>): string {
  const enc = (v: unknown) => encodeURIComponent(String(v ?? ''))
  return r.addressing === 'namespaced'
    ? `/resources/${r.plural}/${enc(row['namespace'])}/${enc(row['name'])}`
    : `/resources/${r.plural}/${enc(row[r.key])}`
}

/** The API path (under /api/v1) to read one resource. */
export function apiReadPath(r: ResourceInfo, params: Record<string, string>): string {
  const enc = encodeURIComponent
  return r.addressing === 'namespaced'
    ? `${r.base}/${enc(params['namespace'] ?? '')}/${enc(params['name'] ?? '')}`
    : `${r.base}/${r.plural === 'webhooks' ? pathSegments(params['key'] ?? '') : enc(params['key'] ?? '')}`
}

/** The API path (under /api/v1) to change or delete a loaded resource. */
export function apiChangePath(r: ResourceInfo, row: Record<string, unknown>): string {
  const enc = (v: unknown) => encodeURIComponent(String(v ?? ''))
  if (r.addressing === 'namespaced') return `${r.base}/${enc(row['namespace'])}/${enc(row['name'])}`
  const v = row[r.changeKey]
  return `${r.base}/${r.plural === 'webhooks' ? pathSegments(String(v ?? '')) : enc(v)}`
}

/** A webhook path (slashes allowed: the route's last parameter is greedy), each segment encoded. */
const pathSegments = (p: string): string => p.split('/').map(encodeURIComponent).join('/')

/** The OpenAPI path templates of the create and update operations (for their body schemas). */
export function schemaPaths(r: ResourceInfo): { create: string; update: string } {
  const base = `/api/v1${r.base}`
  const one = r.addressing === 'namespaced' ? `${base}/{namespace}/{name}` : `${base}/{${r.changeKey}}`
  return { create: base, update: one }
}
