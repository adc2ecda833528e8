import { toolName, type Tool, type ToolDeps, type ToolProvider } from '../feature/tools.ts'
import { AppError } from '../kernel/errors.ts'
import { createLogger, logLevelOf } from '../kernel/log.ts'
import { queryKind } from '../kinds/query/kind.ts'
import { namespacesUsedBy } from '../resources/namespace-store.ts'
import { renderTemplate } from '../templates/render.ts'
import { executableQuery, runQuery, type QueryRecord } from './execute.ts'
import { connectionPools } from './pools.ts'

/*
 * Queries as agent tools (an agent's enabled_queries / query_parameters, tool names
 * `query__{ns}__{name}`). Discovery expands the agent's patterns like the other providers
 * (wildcards only within the namespaces the agent's owner uses, exact names always, the chat
 * user's read permission in both cases). `query_parameters[<ns>/<name>][param] = {value, locked}`:
 * string values are templates over the chat's input (the hardened renderer);
 *  - locked: the parameter disappears from the schema the LLM sees and the value is always
 *    injected; an argument of that name from the LLM is dropped;
 *  - unlocked: the parameter stays, with the value as its `default`, and the LLM may override it.
 * When the tool runs, the query is loaded again as the chat's user and the execute permission
 * checked then (never trusting discovery); errors come back to the LLM as `{error, code}`.
 */
type Preset = { value: unknown; locked: boolean }

function llmSchema(
  q: QueryRecord,
  presets: Record<string, Preset>,
  rendered: Record<string, unknown>,
): Record<string, unknown> {
  const schema = structuredClone(q.input_schema)
  const props = { ...((schema['properties'] ?? {}) as Record<string, Record<string, unknown>>) }
  let required = Array.isArray(schema['required']) ? (schema['required'] as string[]) : []
  for (const [param, preset] of Object.entries(presets)) {
    if (preset.locked) {
      delete props[param]
      required = required.filter((r) => r !== param)
    } else if (param in props) {
      props[param] = { ...props[param], default: rendered[param] }
      required = required.filter((r) => r !== param)
    }
  }
  const { required: _dropped, ...rest } = schema
  return { ...rest, type: 'object', properties: props, ...(required.length > 0 ? { required } : {}) }
}

export function queryTools(d: ToolDeps): ToolProvider {
  // The feature's workers part opened this process's registry with its logger at start; the
  // fallback only serves a process that runs turns without that part.
  const pools = connectionPools({
    db: d.db,
    resources: d.resources,
    config: d.config,
    log: createLogger({ level: logLevelOf(d.config), svc: 'data' }),
  })
  const log = pools.log
  return {
    name: 'queries',
    async discover(ctx) {
      const patterns = ctx.agent.enabled_queries
      if (patterns.length === 0) return []
      const wildcard = patterns.some((pat) => pat.includes('*'))
      const within = wildcard
        ? ctx.agent.owner_id === null
          ? new Set<string>()
          : await namespacesUsedBy(d.db, ctx.agent.owner_id)
        : undefined
      // offered to a user who may read or execute it (`execute` alone runs it)
      const refs = await d.resources.expand(ctx.principal, queryKind, patterns, {
        actions: ['read', 'execute'],
        ...(within === undefined ? {} : { wildcardNamespaces: within }),
      })
      const queries = (await d.resources.loadMany(
        queryKind,
        refs.map((r) => `${r.namespace}/${r.name}`),
      )) as QueryRecord[]
      return queries
        .filter((q) => q.is_active !== false)
        .map((q): Tool => {
          const ref = `${q.namespace}/${q.name}`
          const presets = (ctx.agent.query_parameters[ref] ?? {}) as Record<string, Preset>
          const rendered = Object.fromEntries(
            Object.entries(presets).map(([k, p]) => [
              k,
              typeof p.value === 'string' ? renderTemplate(p.value, ctx.chat.input) : p.value,
            ]),
          )
          const locked = Object.keys(presets).filter((k) => presets[k]?.locked === true)
          const defaults = Object.fromEntries(Object.entries(rendered).filter(([k]) => !locked.includes(k)))
          return {
            name: toolName('query__', q.namespace, q.name),
            description: q.description || `SQL query ${ref} (${q.operation})`,
            parameters: llmSchema(q, presets, rendered),
            requiresApproval: false,
            ref: { namespace: q.namespace, name: q.name },
            async run(args, c) {
              try {
                // permission at execution time, on the query as it is now
                const current = await executableQuery(d, c.principal, q.namespace, q.name)
                const fromLlm = Object.fromEntries(Object.entries(args).filter(([k]) => !locked.includes(k)))
                const input = { ...defaults, ...fromLlm, ...Object.fromEntries(locked.map((k) => [k, rendered[k]])) }
                return await c.blocking(
                  runQuery(
                    { db: d.db, config: d.config, resources: d.resources, pools, log },
                    c.principal,
                    current,
                    input,
                  ),
                )
              } catch (err) {
                if (err instanceof AppError)
                  return {
                    error: err.toBody().detail,
                    code: err.code,
                    ...(err.issues === undefined ? {} : { errors: err.issues }),
                  }
                throw err
              }
            },
          }
        })
    },
  }
}
