import type { Static } from '@sinclair/typebox'
import type { ConnectorOperation } from '../../schemas/connector.ts'
import { toolName, type Tool, type ToolContext, type ToolDeps, type ToolProvider } from '../feature/tools.ts'
import { createSecretBox, previousKeys } from '../kernel/crypto.ts'
import { AppError } from '../kernel/errors.ts'
import { createLogger, logLevelOf } from '../kernel/log.ts'
import { connectorKind } from '../kinds/connector/kind.ts'
import { namespacesUsedBy } from '../resources/namespace-store.ts'
import { renderTemplate } from '../templates/render.ts'
import type { ConnectorDeps, ConnectorRecord } from './deps.ts'
import { callOperation, connectorFor } from './execute.ts'

/*
 * Connectors as agent tools: `connector__{ns}__{name}__{op}` for each operation an agent's
 * `enabled_connectors` entry picks (an empty `operations` list picks all of them). The entry's
 * `parameters` (operation → parameter → value; string values are templates over the chat's input,
 * rendered by the hardened renderer) are LOCKED: they are removed from the schema the LLM sees,
 * anything the LLM sends for them is dropped, and the locked value is always injected. When the
 * tool runs, the connector is loaded again with the chat user's identity and `execute` is checked
 * then (connectorFor), never trusting discovery. Wildcards in `connector` only pick connectors in
 * namespaces the agent's owner owns or was granted (as for functions).
 */
type Operation = Static<typeof ConnectorOperation>

/** The operation's schema without the locked parameters. */
function visibleSchema(op: Operation, locked: ReadonlySet<string>): Record<string, unknown> {
  const schema: Record<string, unknown> = structuredClone(op.parameters ?? {})
  const props = (schema['properties'] ?? {}) as Record<string, unknown>
  for (const k of locked) delete props[k]
  schema['type'] = 'object'
  schema['properties'] = props
  if (Array.isArray(schema['required'])) {
    const req = (schema['required'] as unknown[]).filter((r) => typeof r === 'string' && !locked.has(r))
    if (req.length > 0) schema['required'] = req
    else delete schema['required']
  }
  return schema
}

function describe(c: ConnectorRecord, op: Operation): string {
  const what = op.description !== undefined && op.description !== '' ? op.description : `${op.method} ${op.path}`
  return `${what} (connector ${c.namespace}/${c.name}${c.description === '' ? '' : `: ${c.description}`})`.slice(
    0,
    1024,
  )
}

export function connectorToolProvider(deps: (t: ToolDeps) => ConnectorDeps): (t: ToolDeps) => ToolProvider {
  return (t) => {
    const d = deps(t)
    return {
      name: 'connectors',
      async discover(ctx: ToolContext): Promise<Tool[]> {
        const entries = ctx.agent.enabled_connectors
        if (entries.length === 0) return []
        const wildcard = entries.some((e) => e.connector.includes('*'))
        const within = wildcard
          ? ctx.agent.owner_id === null
            ? new Set<string>()
            : await namespacesUsedBy(t.db, ctx.agent.owner_id)
          : undefined
        const tools: Tool[] = []
        for (const entry of entries) {
          const refs = await t.resources.expand(
            ctx.principal,
            connectorKind,
            [entry.connector],
            within === undefined ? {} : { wildcardNamespaces: within },
          )
          const connectors = (await t.resources.loadMany(
            connectorKind,
            refs.map((r) => `${r.namespace}/${r.name}`),
          )) as ConnectorRecord[]
          for (const c of connectors) {
            if (c.is_active === false) continue
            const ops =
              entry.operations.length === 0
                ? c.operations
                : c.operations.filter((o) => entry.operations.includes(o.name))
            for (const op of ops) {
              const presets = entry.parameters?.[op.name] ?? {}
              const locked = new Set(Object.keys(presets))
              tools.push({
                name: `${toolName('connector__', c.namespace, c.name)}__${op.name}`,
                description: describe(c, op),
                parameters: visibleSchema(op, locked),
                requiresApproval: false,
                ref: { namespace: c.namespace, name: c.name },
                async run(args, runCtx) {
                  try {
                    // locked values win over anything the LLM sent
                    const fixed = Object.fromEntries(
                      Object.entries(presets).map(([k, v]) => [
                        k,
                        typeof v === 'string' ? renderTemplate(v, runCtx.chat.input) : v,
                      ]),
                    )
                    const input = {
                      ...Object.fromEntries(Object.entries(args).filter(([k]) => !locked.has(k))),
                      ...fixed,
                    }
                    const current = await connectorFor(d, runCtx.principal, c.namespace, c.name)
                    const out = await runCtx.blocking(callOperation(d, runCtx.principal, current, op.name, input))
                    return { status: out.status, body: out.body }
                  } catch (err) {
                    if (err instanceof AppError) return { error: err.message, code: err.code }
                    throw err
                  }
                },
              })
            }
          }
        }
        return tools
      },
    }
  }
}

/** The connectors' provider with the agent workers' deps (the connectors feature's `tools`). */
export const connectorTools = connectorToolProvider((t) => ({
  db: t.db,
  config: t.config,
  resources: t.resources,
  box: createSecretBox(t.config.ENCRYPTION_KEY, previousKeys(t.config.ENCRYPTION_KEY_PREVIOUS)),
  log: createLogger({ level: logLevelOf(t.config), svc: 'connectors' }),
}))
