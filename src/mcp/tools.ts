import { NAME_PATTERN } from '../../schemas/common.ts'
import type { Principal } from '../auth/principal.ts'
import { agentKind } from '../kinds/agent/kind.ts'
import { functionKind } from '../kinds/function/kind.ts'
import { queryKind } from '../kinds/query/kind.ts'
import { canOnResource } from '../resources/permissions.ts'
import type { ResourceRecord, ResourceService } from '../resources/service.ts'

/*
 * The tools an MCP client sees: what its caller may run now, with the very checks the API makes
 * when it runs them (the execute permission of a function or a query, read and chat on an agent;
 * src/kinds/function/executable.ts, src/data/execute.ts, src/chats/service.ts agentFor). The
 * checks are made again when a tool is called: the route that runs it makes them.
 *
 * Names: `fn.<namespace>.<name>`, `query.<namespace>.<name>`, `agent.<namespace>.<name>`. Platform
 * names are `[a-z0-9_-]`, so the dots separate unambiguously; a name over MCP's 128 characters
 * (only when namespace and name are both near their 63) is left out.
 */
export type ToolKind = 'fn' | 'query' | 'agent'

export interface ToolTarget {
  kind: ToolKind
  namespace: string
  name: string
}

export interface McpTool {
  name: string
  title: string
  description: string
  inputSchema: Record<string, unknown>
}

const MAX_TOOL_NAME = 128
const NAME = new RegExp(NAME_PATTERN)
const KINDS: ReadonlySet<string> = new Set(['fn', 'query', 'agent'])

export const toolName = (t: ToolTarget): string => `${t.kind}.${t.namespace}.${t.name}`

/** The target of a tool name, or null for anything that is not one of ours. */
export function parseToolName(tool: string): ToolTarget | null {
  const parts = tool.split('.')
  if (parts.length !== 3) return null
  const [kind, namespace, name] = parts as [string, string, string]
  if (!KINDS.has(kind) || !NAME.test(namespace) || !NAME.test(name)) return null
  return { kind: kind as ToolKind, namespace, name }
}

type Json = Record<string, unknown>

const isObjectSchema = (s: Json): boolean =>
  s['type'] === 'object' || (s['type'] === undefined && s['oneOf'] === undefined && s['anyOf'] === undefined)

/**
 * A function's input as an MCP input schema (which must describe an object): an object schema is
 * the input itself; any other (a number, an array) is wrapped as the argument `input`.
 */
export function functionInputSchema(schema: unknown): { schema: Json; wrapped: boolean } {
  const s = (typeof schema === 'object' && schema !== null ? schema : {}) as Json
  if (isObjectSchema(s)) return { schema: { ...s, type: 'object' }, wrapped: false }
  return { schema: { type: 'object', properties: { input: s }, required: ['input'] }, wrapped: true }
}

const objectSchema = (schema: unknown): Json => {
  const s = (typeof schema === 'object' && schema !== null ? schema : {}) as Json
  return { ...s, type: 'object' }
}

function agentInputSchema(agent: ResourceRecord): Json {
  const input = agent['input_schema'] as Json | null | undefined
  const needsInput = Array.isArray(input?.['required']) && (input['required'] as unknown[]).length > 0
  return {
    type: 'object',
    properties: {
      message: { type: 'string', description: 'the message the agent answers' },
      ...(input === null || input === undefined ? {} : { input: objectSchema(input) }),
    },
    required: needsInput ? ['message', 'input'] : ['message'],
  }
}

const meta = (r: ResourceRecord): { namespace: string; name: string; ownerId: string | null } => ({
  namespace: String(r['namespace']),
  name: r.name,
  ownerId: (r['owner_id'] as string | null | undefined) ?? null,
})

const describe = (r: ResourceRecord, what: string): string => {
  const d = r['description']
  return typeof d === 'string' && d !== '' ? d : `${what} ${String(r['namespace'])}/${r.name}`
}

/** Every tool `p` may use now (in `namespace` only, when given), sorted by name. */
export async function listTools(
  resources: Pick<ResourceService, 'all'>,
  p: Principal,
  namespace: string | undefined,
): Promise<McpTool[]> {
  const [fns, queries, agents] = await Promise.all([
    resources.all(functionKind),
    resources.all(queryKind),
    resources.all(agentKind),
  ])
  const inScope = (r: ResourceRecord) => namespace === undefined || r['namespace'] === namespace
  const tools: McpTool[] = []
  const add = (kind: ToolKind, r: ResourceRecord, title: string, description: string, inputSchema: Json) => {
    const name = toolName({ kind, namespace: String(r['namespace']), name: r.name })
    if (name.length <= MAX_TOOL_NAME) tools.push({ name, title, description, inputSchema })
  }
  for (const f of fns)
    if (inScope(f) && f['is_active'] !== false && canOnResource(p, functionKind, 'execute', meta(f)))
      add(
        'fn',
        f,
        `Function ${String(f['namespace'])}/${f.name}`,
        describe(f, 'Function'),
        functionInputSchema(f['input_schema']).schema,
      )
  for (const q of queries)
    if (inScope(q) && q['is_active'] !== false && canOnResource(p, queryKind, 'execute', meta(q)))
      add(
        'query',
        q,
        `Query ${String(q['namespace'])}/${q.name}`,
        describe(q, 'Saved query'),
        objectSchema(q['input_schema']),
      )
  for (const a of agents)
    if (
      inScope(a) &&
      a['is_active'] !== false &&
      canOnResource(p, agentKind, 'read', meta(a)) &&
      canOnResource(p, agentKind, 'chat', meta(a))
    )
      add(
        'agent',
        a,
        `Agent ${String(a['namespace'])}/${a.name}`,
        `${describe(a, 'Agent')} (one message in a new chat; answers the agent's reply)`,
        agentInputSchema(a),
      )
  return tools.sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0))
}
