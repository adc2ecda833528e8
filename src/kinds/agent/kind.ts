import { AgentSpec } from '../../../schemas/agent.ts'
import { defineKind } from '../../resources/kind.ts'
import { templateIssues } from '../../templates/render.ts'
import { schemaIssues } from '../../kernel/json-schema.ts'
import { knownSystemTools, systemToolIssues } from './system-tools.ts'

const refOf = (entry: string | Record<string, unknown>, key: string): string =>
  typeof entry === 'string' ? entry : String(entry[key])
const refsIn = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [])

export const agentKind = defineKind({
  kind: 'agent',
  plural: 'agents',
  title: 'Agent',
  description: 'LLM assistants with a system prompt, tools, hooks and sub-agents.',
  spec: AgentSpec,
  refs: (s) => [
    ...s.enabled_functions.map((ref) => ({ kind: 'function', ref })),
    ...s.enabled_agents.map((ref) => ({ kind: 'agent', ref })),
    ...s.enabled_skills.map((e) => ({ kind: 'skill', ref: refOf(e, 'skill') })),
    ...s.enabled_queries.map((ref) => ({ kind: 'query', ref })),
    ...s.enabled_collections.map((e) => ({ kind: 'collection', ref: refOf(e, 'collection') })),
    ...s.enabled_stores.map((e) => ({ kind: 'store', ref: e.store })),
    ...s.enabled_connectors.map((e) => ({ kind: 'connector', ref: e.connector })),
    ...s.enabled_mcp_servers.map((e) => ({ kind: 'mcp_server', ref: e.server })),
    ...[...s.hooks.on_user_message, ...s.hooks.on_assistant_message].map((h) => ({
      kind: 'function',
      ref: h.function,
    })),
    // what the system tools' options name (src/kinds/agent/system-tools.ts)
    ...knownSystemTools(s.system_tools).flatMap((e) =>
      e.name === 'search_files'
        ? refsIn(e.options['collections']).map((ref) => ({ kind: 'collection', ref }))
        : e.name === 'render_template'
          ? refsIn(e.options['templates']).map((ref) => ({ kind: 'template', ref }))
          : [],
    ),
  ],
  // the icon is the files feature's check (its specChecks: src/files/icon-spec-check.ts)
  validate: async (s) => [
    ...templateIssues('system_prompt', s.system_prompt),
    // checked by every turn (output) and chat creation (input): a schema that does not compile is refused here
    ...schemaIssues('input_schema', s.input_schema),
    ...schemaIssues('output_schema', s.output_schema),
    ...systemToolIssues(s.system_tools),
    ...Object.entries(s.function_parameters).flatMap(([fn, params]) =>
      Object.entries(params).flatMap(([param, v]) =>
        typeof v === 'string' ? templateIssues(`function_parameters.${fn}.${param}`, v) : [],
      ),
    ),
  ],
})
