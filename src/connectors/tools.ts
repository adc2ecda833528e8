import type { Static } from '@sinclair/typebox'
import type { ConnectorOperation } from '../../schemas/connector.ts'
import { lockedTool, lockedToolDeps, resourceToolDescription } from '../feature/locked-tool.ts'
import { expandAndLoad, toolName, type Tool, type ToolDeps, type ToolProvider } from '../feature/tools.ts'
import { connectorKind } from '../kinds/connector/kind.ts'
import type { ConnectorDeps, ConnectorRecord } from './deps.ts'
import { callOperation, connectorFor } from './execute.ts'

/*
 * Connectors as agent tools: `connector__{ns}__{name}__{op}` for each operation an agent's
 * `enabled_connectors` entry picks (an empty `operations` list picks all of them). The entry's
 * `parameters` (operation → parameter → value) are LOCKED (src/feature/locked-tool.ts). When the
 * tool runs, the connector is loaded again with the chat user's identity and `execute` is checked
 * then (connectorFor), never trusting discovery. Wildcards in `connector` only pick connectors in
 * namespaces the agent's owner owns or was granted (as for functions).
 */
type Operation = Static<typeof ConnectorOperation>

const describe = (c: ConnectorRecord, op: Operation): string =>
  resourceToolDescription(
    op.description !== undefined && op.description !== '' ? op.description : `${op.method} ${op.path}`,
    'connector',
    c,
  )

export function connectorToolProvider(deps: (t: ToolDeps) => ConnectorDeps): (t: ToolDeps) => ToolProvider {
  return (t) => {
    const d = deps(t)
    return {
      name: 'connectors',
      async discover(ctx): Promise<Tool[]> {
        const tools: Tool[] = []
        for (const entry of ctx.agent.enabled_connectors) {
          const connectors = (await expandAndLoad(t, ctx.principal, ctx.agent, connectorKind, [
            entry.connector,
          ])) as ConnectorRecord[]
          for (const c of connectors) {
            const ops =
              entry.operations.length === 0
                ? c.operations
                : c.operations.filter((o) => entry.operations.includes(o.name))
            for (const op of ops) {
              tools.push(
                lockedTool({
                  name: `${toolName('connector__', c.namespace, c.name)}__${op.name}`,
                  description: describe(c, op),
                  schema: op.parameters ?? {},
                  presets: entry.parameters?.[op.name] ?? {},
                  ref: { namespace: c.namespace, name: c.name },
                  async call(input, runCtx) {
                    const current = await connectorFor(d, runCtx.principal, c.namespace, c.name)
                    const out = await runCtx.blocking(callOperation(d, runCtx.principal, current, op.name, input))
                    return { status: out.status, body: out.body }
                  },
                }),
              )
            }
          }
        }
        return tools
      },
    }
  }
}

/** The connectors' provider with the agent workers' deps (the connectors feature's `tools`). */
export const connectorTools = connectorToolProvider((t) => lockedToolDeps(t, 'connectors'))
