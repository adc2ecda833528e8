import { Type as T, type Static, type TObject } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { RefPattern } from '../../../schemas/common.ts'
import type { FieldIssue } from '../../kernel/errors.ts'

/*
 * The catalogue of an agent's `system_tools`: each name with the options its entry may carry
 * (`"current_time"` or `{"name": "current_time", "timezone": "Europe/Berlin"}`). Checked when the
 * agent is saved, so an unknown name or a wrong option is a 422 naming the entry instead of a tool
 * that silently never appears. No I/O: the kind (and so the gateway) imports it; the tools
 * themselves are src/chats/system-tools.ts.
 */
export const SYSTEM_TOOL_OPTIONS = {
  current_time: T.Object(
    {
      timezone: T.Optional(
        T.String({ minLength: 1, maxLength: 100, description: 'IANA time zone of the answer (default UTC)' }),
      ),
    },
    { additionalProperties: false },
  ),
  search_files: T.Object(
    {
      collections: T.Optional(
        T.Array(RefPattern, {
          minItems: 1,
          maxItems: 50,
          description: "collections searched (default: the agent's enabled_collections)",
        }),
      ),
      max_results: T.Optional(
        T.Integer({ minimum: 1, maximum: 200, description: 'files answered per call (default 20)' }),
      ),
    },
    { additionalProperties: false },
  ),
  render_template: T.Object(
    { templates: T.Array(RefPattern, { minItems: 1, maxItems: 50, description: 'templates the tool may render' }) },
    { additionalProperties: false },
  ),
  schedule_message: T.Object(
    {
      max_delay_seconds: T.Optional(
        T.Integer({
          minimum: 1,
          maximum: 30 * 86_400,
          description: 'the longest delay the model may ask for (default 86400)',
        }),
      ),
    },
    { additionalProperties: false },
  ),
} satisfies Record<string, TObject>

export type SystemToolName = keyof typeof SYSTEM_TOOL_OPTIONS
export type SystemToolOptions<N extends SystemToolName> = Static<(typeof SYSTEM_TOOL_OPTIONS)[N]>
export const SYSTEM_TOOL_NAMES = Object.keys(SYSTEM_TOOL_OPTIONS) as SystemToolName[]

/** A `system_tools` entry as saved: the name, or the name with options. */
export type SystemToolEntry = string | ({ name: string } & Record<string, unknown>)

const isKnown = (name: string): name is SystemToolName => Object.hasOwn(SYSTEM_TOOL_OPTIONS, name)

/** An entry's name and options (`{}` for a bare name). */
export function systemToolEntry(entry: SystemToolEntry): { name: string; options: Record<string, unknown> } {
  if (typeof entry === 'string') return { name: entry, options: {} }
  const { name, ...options } = entry
  return { name, options }
}

/** The entries of a known name, with their options (the saved entries were checked). */
export function knownSystemTools(
  entries: readonly SystemToolEntry[],
): { name: SystemToolName; options: Record<string, unknown> }[] {
  return entries
    .map(systemToolEntry)
    .filter((e): e is { name: SystemToolName; options: Record<string, unknown> } => isKnown(e.name))
}

/** Whether a time zone name is one this runtime knows. */
export function knownTimeZone(zone: string): boolean {
  try {
    // the constructor refuses a zone it does not know (RangeError)
    return new Intl.DateTimeFormat('en', { timeZone: zone }).resolvedOptions().timeZone !== ''
  } catch {
    return false
  }
}

/** What is wrong with an agent's `system_tools`: unknown names, names listed twice, options that do not fit. */
export function systemToolIssues(entries: readonly SystemToolEntry[]): FieldIssue[] {
  const issues: FieldIssue[] = []
  const seen = new Set<string>()
  entries.forEach((entry, i) => {
    const path = `system_tools.${String(i)}`
    const { name, options } = systemToolEntry(entry)
    if (!isKnown(name)) {
      issues.push({ path, message: `unknown system tool "${name}"; known: ${SYSTEM_TOOL_NAMES.join(', ')}` })
      return
    }
    if (seen.has(name)) issues.push({ path, message: `system tool "${name}" is listed twice` })
    seen.add(name)
    const schema = SYSTEM_TOOL_OPTIONS[name]
    for (const e of Value.Errors(schema, options))
      issues.push({ path: `${path}${e.path.replaceAll('/', '.')}`, message: `${name}: ${e.message}` })
    if (name === 'current_time' && typeof options['timezone'] === 'string' && !knownTimeZone(options['timezone']))
      issues.push({ path: `${path}.timezone`, message: `unknown time zone "${options['timezone']}"` })
  })
  return issues
}
