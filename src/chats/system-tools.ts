import type { Static } from '@sinclair/typebox'
import type { TemplateSpec } from '../../schemas/template.ts'
import { agentKind } from '../kinds/agent/kind.ts'
import {
  knownSystemTools,
  knownTimeZone,
  type SystemToolName,
  type SystemToolOptions,
} from '../kinds/agent/system-tools.ts'
import { collectionKind } from '../kinds/collection/kind.ts'
import { templateKind } from '../kinds/template/kind.ts'
import { AppError } from '../kernel/errors.ts'
import { readableCollection } from '../files/access.ts'
import { searchCollection } from '../files/search.ts'
import { canOnResource } from '../resources/permissions.ts'
import type { ResourceRecord } from '../resources/service.ts'
import { renderTemplateResource } from '../template-api/render.ts'
import { scheduleFollowUp } from './follow-up.ts'
import { expandAndLoad, type Tool, type ToolContext, type ToolDeps, type ToolProvider } from '../feature/tools.ts'

/*
 * The platform capabilities an agent lists in `system_tools` (the catalogue and the options each
 * takes: src/kinds/agent/system-tools.ts, checked on save). Each runs as the chat's user through
 * the service the HTTP API uses, with that user's permission checked when the call runs:
 *
 *   current_time      the date and time, in the entry's time zone or one the model names
 *   search_files      one search over several collections (the option's, or enabled_collections)
 *   render_template   a template resource named by the option, rendered with the model's variables
 *   schedule_message  a message sent into this chat later, as the user's (src/chats/follow-up.ts)
 */
type Entry<N extends SystemToolName> = { name: N; options: SystemToolOptions<N> }
type Make<N extends SystemToolName> = (d: ToolDeps, ctx: ToolContext, e: Entry<N>) => Promise<Tool[]>

const base = { requiresApproval: false }

/** A failure as the result the model reads (with the code, so it can tell "missing" from "refused"). */
const failure = (err: unknown): { error: string; code?: string } =>
  err instanceof AppError
    ? { error: err.message, code: err.code }
    : { error: err instanceof Error ? err.message : String(err) }

const guarded =
  (fn: Tool['run']): Tool['run'] =>
  async (args, ctx, call) => {
    try {
      return await fn(args, ctx, call)
    } catch (err) {
      return failure(err)
    }
  }

/** `now` in a time zone: the wall-clock time, the zone's offset and the weekday. */
function timeIn(now: Date, timeZone: string): { local: string; utc_offset: string; weekday: string } {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      weekday: 'long',
      timeZoneName: 'longOffset',
    })
      .formatToParts(now)
      .map((p) => [p.type, p.value]),
  )
  const offset = String(parts['timeZoneName'] ?? 'GMT').replace('GMT', '') || '+00:00'
  return {
    local: `${String(parts['year'])}-${String(parts['month'])}-${String(parts['day'])}T${String(parts['hour'])}:${String(parts['minute'])}:${String(parts['second'])}`,
    utc_offset: offset,
    weekday: String(parts['weekday']),
  }
}

const currentTime: Make<'current_time'> = async (_d, _ctx, e) => {
  const zone = e.options.timezone ?? 'UTC'
  return [
    {
      ...base,
      name: 'current_time',
      description: `The current date and time (default time zone ${zone})`,
      parameters: {
        type: 'object',
        properties: {
          timezone: { type: 'string', description: `an IANA time zone, e.g. Europe/Berlin (default ${zone})` },
        },
      },
      run: guarded(async (args) => {
        const asked = typeof args['timezone'] === 'string' && args['timezone'] !== '' ? args['timezone'] : zone
        if (!knownTimeZone(asked)) return { error: `unknown time zone "${asked}"` }
        const now = new Date()
        return { now: now.toISOString(), timezone: asked, ...timeIn(now, asked) }
      }),
    },
  ]
}

const searchFiles: Make<'search_files'> = async (d, ctx, e) => {
  const patterns =
    e.options.collections ?? ctx.agent.enabled_collections.map((c) => (typeof c === 'string' ? c : c.collection))
  // the collections the chat's user may read now (wildcards within the agent owner's namespaces)
  const found = await expandAndLoad(d, ctx.principal, ctx.agent, collectionKind, patterns)
  if (found.length === 0) return []
  const refs = found.map((c) => `${c.namespace}/${c.name}`)
  const max = e.options.max_results ?? 20
  return [
    {
      ...base,
      name: 'search_files',
      description: `Search the files of the collections ${refs.join(', ')} by name, metadata and text content`,
      parameters: {
        type: 'object',
        properties: {
          query: { type: 'string', description: 'text to look for (case-insensitive)' },
          collection: { type: 'string', enum: refs, description: 'only this collection (default: all of them)' },
          metadata_filter: { type: 'object', description: 'files whose metadata contains these key/values' },
        },
      },
      run: guarded(async (args, c) => {
        const only = typeof args['collection'] === 'string' ? args['collection'] : undefined
        if (only !== undefined && !refs.includes(only))
          return { error: `collection ${only} is not searched by this tool; it searches ${refs.join(', ')}` }
        const query = typeof args['query'] === 'string' ? args['query'] : undefined
        const filter =
          typeof args['metadata_filter'] === 'object' &&
          args['metadata_filter'] !== null &&
          !Array.isArray(args['metadata_filter'])
            ? (args['metadata_filter'] as Record<string, unknown>)
            : undefined
        const results: {
          collection: string
          filename: string
          version: number
          matches: { line: number; text: string }[]
        }[] = []
        const refused: { collection: string; error: string }[] = []
        for (const ref of only === undefined ? refs : [only]) {
          if (results.length >= max) break
          const [ns = '', name = ''] = ref.split('/')
          // the user's read permission on the collection, as it is now
          const col = await readableCollection(d.resources, c.principal, ns, name).catch((err: unknown) => {
            refused.push({ collection: ref, error: failure(err).error })
            return null
          })
          if (col === null) continue
          const hits = await searchCollection(d.db, c.principal, col, {
            ...(query === undefined ? {} : { query }),
            ...(filter === undefined ? {} : { metadata_filter: filter }),
            limit: max - results.length,
          })
          results.push(...hits.map((h) => ({ collection: ref, ...h })))
        }
        return { results, ...(refused.length === 0 ? {} : { refused }) }
      }),
    },
  ]
}

/** `<namespace>/<name>` against a reference pattern (`ns/name`, `ns/*`, `*\/*`). */
const matches = (pattern: string, ref: string): boolean => {
  const [pns, pname] = pattern.split('/')
  const [ns, name] = ref.split('/')
  return (pns === '*' || pns === ns) && (pname === '*' || pname === name)
}

const renderTemplate: Make<'render_template'> = async (d, ctx, e) => {
  const allowed = e.options.templates
  // offered when the chat's user may read at least one of them now
  const readable = await expandAndLoad(d, ctx.principal, ctx.agent, templateKind, allowed)
  if (readable.length === 0) return []
  const refs = readable.map((t) => `${t.namespace}/${t.name}`)
  return [
    {
      ...base,
      name: 'render_template',
      description: `Render a template (${refs.join(', ')}) with variables; answers its title, html_content and text_content`,
      parameters: {
        type: 'object',
        properties: {
          template: { type: 'string', enum: refs, description: '`<namespace>/<name>`' },
          variables: { type: 'object', description: "values for the template's variables" },
        },
        required: ['template'],
      },
      run: guarded(async (args, c) => {
        const ref = typeof args['template'] === 'string' ? args['template'] : ''
        if (!allowed.some((p) => matches(p, ref)))
          return { error: `template ${ref || '(none given)'} is not one this agent may render` }
        const [namespace = '', name = ''] = ref.split('/')
        // the user's read permission on the template, as it is now (404 when it may not see it)
        const t = (await d.resources.get(c.principal, templateKind, { namespace, name })) as ResourceRecord<
          Static<typeof TemplateSpec>
        >
        if (!t.is_active) return { error: `template ${ref} is inactive` }
        const vars =
          typeof args['variables'] === 'object' && args['variables'] !== null && !Array.isArray(args['variables'])
            ? (args['variables'] as Record<string, unknown>)
            : {}
        return { template: ref, ...renderTemplateResource(t, vars) }
      }),
    },
  ]
}

const scheduleMessage: Make<'schedule_message'> = async (d, ctx, e) => {
  // a sub-agent's hidden chat (or the adapter's) has nobody to read a follow-up
  if (ctx.chat.internal) return []
  const max = e.options.max_delay_seconds ?? 86_400
  return [
    {
      ...base,
      name: 'schedule_message',
      description: `Send a message into this chat later (after 1 to ${String(max)} seconds), as if the user sent it: you will then answer it. For reminders and checking back.`,
      parameters: {
        type: 'object',
        properties: {
          message: { type: 'string', minLength: 1, description: 'the message to send' },
          delay_seconds: { type: 'integer', minimum: 1, maximum: max },
        },
        required: ['message', 'delay_seconds'],
      },
      run: guarded(async (args, c) => {
        const message = args['message']
        const delay = args['delay_seconds']
        if (typeof message !== 'string' || message.trim() === '' || message.length > 1_000_000)
          return { error: 'message must be a non-empty string' }
        if (typeof delay !== 'number' || !Number.isInteger(delay) || delay < 1 || delay > max)
          return { error: `delay_seconds must be an integer from 1 to ${String(max)}` }
        // the user's permission to chat with the agent, as it is now (checked again when it is due)
        if (
          !canOnResource(c.principal, agentKind, 'chat', {
            namespace: c.agent.namespace,
            name: c.agent.name,
            ownerId: c.agent.owner_id,
          })
        )
          return { error: `not permitted to chat with ${c.agent.namespace}/${c.agent.name}` }
        const job = await scheduleFollowUp(d.invoke.enqueue, c, message, delay)
        return { scheduled: true, execution_id: job.id, due_at: job.due_at ?? null }
      }),
    },
  ]
}

const MAKERS: { [N in SystemToolName]: Make<N> } = {
  current_time: currentTime,
  search_files: searchFiles,
  render_template: renderTemplate,
  schedule_message: scheduleMessage,
}

/** The agent's `system_tools` as tools of this turn. */
export function systemToolProvider(d: ToolDeps): ToolProvider {
  return {
    name: 'system',
    async discover(ctx) {
      const made = await Promise.all(
        knownSystemTools(ctx.agent.system_tools).map((e) =>
          (MAKERS[e.name] as Make<SystemToolName>)(d, ctx, e as Entry<SystemToolName>),
        ),
      )
      return made.flat()
    },
  }
}
