import { paint, type Io } from './io.ts'

/*
 * An apply result (`POST /api/v1/config/apply`, a package preview or install) as a plan, like
 * `terraform plan` / `kubectl diff`: one line per resource (`+` created, `~` updated, `-` deleted,
 * `=` unchanged), the changed fields under it, then the errors, the warnings and a summary.
 */

export interface ApplyChange {
  action: 'created' | 'updated' | 'deleted' | 'unchanged'
  resourceType: string
  resourceName: string
  fields?: unknown
}

export interface ApplyResult {
  success: boolean
  summary: { created: number; updated: number; unchanged: number; deleted: number }
  changes: ApplyChange[]
  errors: { path: string; message: string; line?: number; column?: number }[]
  warnings: string[]
}

interface FieldChange {
  path: string
  change: 'added' | 'removed' | 'changed'
  before?: unknown
  after?: unknown
}

const SIGN: Record<ApplyChange['action'], string> = { created: '+', updated: '~', deleted: '-', unchanged: '=' }
const FIELD_SIGN: Record<FieldChange['change'], string> = { added: '+', changed: '~', removed: '-' }
const COLOR: Record<string, string> = { '+': '32', '~': '33', '-': '31', '=': '2', '!': '35' }
const MAX_VALUE = 60

function shown(v: unknown): string {
  if (typeof v === 'string' && v.includes('\n')) return `(${String(v.split('\n').length)} lines)`
  const text = JSON.stringify(v) ?? 'null'
  return text.length > MAX_VALUE ? `${text.slice(0, MAX_VALUE - 1)}…` : text
}

/** The field changes the server sent, whatever their shape: a list of `{path, change, before, after}` or a map. */
function fieldsOf(fields: unknown): FieldChange[] {
  if (Array.isArray(fields))
    return fields.filter(
      (f): f is FieldChange => typeof f === 'object' && f !== null && typeof (f as FieldChange).path === 'string',
    )
  if (typeof fields === 'object' && fields !== null)
    return Object.entries(fields).map(([path, v]) => {
      const o = (typeof v === 'object' && v !== null ? v : { after: v }) as { before?: unknown; after?: unknown }
      const change = !('before' in o) ? 'added' : !('after' in o) ? 'removed' : 'changed'
      return { path, change, before: o.before, after: o.after }
    })
  return []
}

function fieldLine(f: FieldChange): string {
  if (f.change === 'added') return `${f.path} = ${shown(f.after)}`
  if (f.change === 'removed') return `${f.path} = ${shown(f.before)}`
  return `${f.path}: ${shown(f.before)} → ${shown(f.after)}`
}

/** Whether the result changes anything (diff's exit code 2). */
export const hasChanges = (r: ApplyResult): boolean => r.summary.created + r.summary.updated + r.summary.deleted > 0

export function renderPlan(r: ApplyResult, io: Io, o: { applied: boolean }): string {
  const c = (sign: string, text: string) => paint(io, COLOR[sign] ?? '0', text)
  const lines: string[] = []
  for (const ch of r.changes) {
    const sign = SIGN[ch.action] ?? '?'
    lines.push(c(sign, `  ${sign} ${ch.resourceType} ${ch.resourceName}`))
    for (const f of fieldsOf(ch.fields))
      lines.push(c(FIELD_SIGN[f.change], `      ${FIELD_SIGN[f.change]} ${fieldLine(f)}`))
  }
  for (const w of r.warnings) lines.push(c('!', `  ! ${w}`))
  for (const e of r.errors) {
    const at = e.line === undefined ? '' : ` (line ${String(e.line)}, column ${String(e.column ?? 1)})`
    lines.push(c('-', `  error: ${e.path}${at}${e.path === '' && at === '' ? '' : ': '}${e.message}`))
  }
  const s = r.summary
  const total = s.created + s.updated + s.deleted
  const verb = o.applied ? ['created', 'updated', 'deleted'] : ['to create', 'to update', 'to delete']
  lines.push(
    '',
    !r.success
      ? 'Failed: nothing was changed.'
      : total === 0
        ? `No changes: ${String(s.unchanged)} unchanged.`
        : `${o.applied ? 'Applied' : 'Plan'}: ${String(s.created)} ${verb[0] ?? ''}, ${String(s.updated)} ${verb[1] ?? ''}, ${String(s.deleted)} ${verb[2] ?? ''}, ${String(s.unchanged)} unchanged.`,
  )
  return `${lines.join('\n')}\n`
}
