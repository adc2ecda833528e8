import type { Config } from '../kernel/config.ts'
import { createSecretBox, previousKeys, type SecretBox } from '../kernel/crypto.ts'
import { AppError } from '../kernel/errors.ts'
import { createLogger, logLevelOf, type Logger } from '../kernel/log.ts'
import type { Db } from '../platform/db.ts'
import type { ResourceService } from '../resources/service.ts'
import { renderTemplate } from '../templates/render.ts'
import type { Tool, ToolContext, ToolDeps } from './tools.ts'

/*
 * A tool over an outside service whose agent entry LOCKS some of its parameters (a connector's
 * operation, a remote MCP server's tool): the entry's values (parameter → value; string values are
 * templates over the chat's input, rendered by the hardened renderer) are removed from the schema
 * the LLM sees, anything the LLM sends for them is dropped, and the locked value is always
 * injected. The call's AppErrors (the permission checked again at call time, a template that does
 * not render, the service's refusals) come back to the LLM as `{ error, code }`; anything else is
 * the turn's failure.
 */
export interface LockedToolSpec {
  name: string
  description: string
  /** The full input schema; the LLM sees it without the locked parameters. */
  schema: Record<string, unknown>
  /** The agent entry's values for this tool (parameter → value). */
  presets: Record<string, unknown>
  ref: { namespace: string; name: string }
  /** Runs the call with the LLM's arguments and the locked values merged. */
  call(input: Record<string, unknown>, ctx: ToolContext): Promise<unknown>
}

/** The schema without the locked parameters (a copy): gone from `properties` and `required`. */
function visibleSchema(schema: Record<string, unknown>, locked: ReadonlySet<string>): Record<string, unknown> {
  const out: Record<string, unknown> = structuredClone(schema)
  const props = (out['properties'] ?? {}) as Record<string, unknown>
  for (const k of locked) delete props[k]
  out['type'] = 'object'
  out['properties'] = props
  if (Array.isArray(out['required'])) {
    const req = (out['required'] as unknown[]).filter((r) => typeof r === 'string' && !locked.has(r))
    if (req.length > 0) out['required'] = req
    else delete out['required']
  }
  return out
}

export function lockedTool(spec: LockedToolSpec): Tool {
  const { presets } = spec
  const locked = new Set(Object.keys(presets))
  return {
    name: spec.name,
    description: spec.description,
    parameters: visibleSchema(spec.schema, locked),
    requiresApproval: false,
    ref: spec.ref,
    async run(args, ctx) {
      try {
        // locked values win over anything the LLM sent
        const fixed = Object.fromEntries(
          Object.entries(presets).map(([k, v]) => [k, typeof v === 'string' ? renderTemplate(v, ctx.chat.input) : v]),
        )
        const input = { ...Object.fromEntries(Object.entries(args).filter(([k]) => !locked.has(k))), ...fixed }
        return await spec.call(input, ctx)
      } catch (err) {
        if (err instanceof AppError) return { error: err.message, code: err.code }
        throw err
      }
    },
  }
}

/** A tool's description: what it does, then the resource it comes from; at most 1,024 characters. */
export function resourceToolDescription(
  what: string,
  label: string,
  r: { namespace: string; name: string; description: string },
): string {
  return `${what} (${label} ${r.namespace}/${r.name}${r.description === '' ? '' : `: ${r.description}`})`.slice(0, 1024)
}

/** What such a provider's calls need of the worker: its db, config and resources, the secret box (secrets, OAuth tokens), a logger of its own. */
export function lockedToolDeps(
  t: ToolDeps,
  svc: string,
): { db: Db; config: Config; resources: ResourceService; box: SecretBox; log: Logger } {
  return {
    db: t.db,
    config: t.config,
    resources: t.resources,
    box: createSecretBox(t.config.ENCRYPTION_KEY, previousKeys(t.config.ENCRYPTION_KEY_PREVIOUS)),
    log: createLogger({ level: logLevelOf(t.config), svc }),
  }
}
