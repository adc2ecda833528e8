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
  /** When refused: the error code. */
  code?: string
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

/** Lines of texts longer than this are not compared line by line (the LCS table is their product). */
const MAX_DIFF_LINES = 400

/**
 * The lines two texts differ in, `-` before `+`, by the longest common subsequence of their lines
 * (no context lines: the plan names the field, the lines say what changed in it).
 */
export function lineDiff(before: string, after: string): string[] | null {
  const a = before.split('\n')
  const b = after.split('\n')
  if (a.length > MAX_DIFF_LINES || b.length > MAX_DIFF_LINES) return null
  // lcs[i][j]: the common subsequence length of a[i..] and b[j..]
  const lcs = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0))
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--)
      (lcs[i] as number[])[j] =
        a[i] === b[j]
          ? ((lcs[i + 1] as number[])[j + 1] as number) + 1
          : Math.max((lcs[i + 1] as number[])[j] as number, (lcs[i] as number[])[j + 1] as number)
  const out: string[] = []
  let i = 0
  let j = 0
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      i++
      j++
    } else if (
      i < a.length &&
      (j === b.length || ((lcs[i + 1] as number[])[j] as number) >= ((lcs[i] as number[])[j + 1] as number))
    )
      out.push(`- ${a[i++] as string}`)
    else out.push(`+ ${b[j++] as string}`)
  }
  return out
}

/** Whether the result changes anything (diff's exit code 2). */
export const hasChanges = (r: ApplyResult): boolean => r.summary.created + r.summary.updated + r.summary.deleted > 0

export function renderPlan(r: ApplyResult, io: Io, o: { applied: boolean }): string {
  const c = (sign: string, text: string) => paint(io, COLOR[sign] ?? '0', text)
  const lines: string[] = []
  for (const ch of r.changes) {
    const sign = SIGN[ch.action] ?? '?'
    lines.push(c(sign, `  ${sign} ${ch.resourceType} ${ch.resourceName}`))
    for (const f of fieldsOf(ch.fields)) {
      const text =
        f.change === 'changed' &&
        typeof f.before === 'string' &&
        typeof f.after === 'string' &&
        (f.before + f.after).includes('\n')
          ? lineDiff(f.before, f.after)
          : null
      if (text === null) {
        lines.push(c(FIELD_SIGN[f.change], `      ${FIELD_SIGN[f.change]} ${fieldLine(f)}`))
        continue
      }
      // a text of several lines: the lines that changed, under the field
      lines.push(c('~', `      ~ ${f.path}:`))
      for (const l of text) lines.push(c(l[0] as string, `          ${l}`))
    }
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
      ? `Failed${r.code === undefined ? '' : ` (${r.code})`}: nothing was changed.`
      : total === 0
        ? `No changes: ${String(s.unchanged)} unchanged.`
        : `${o.applied ? 'Applied' : 'Plan'}: ${String(s.created)} ${verb[0] ?? ''}, ${String(s.updated)} ${verb[1] ?? ''}, ${String(s.deleted)} ${verb[2] ?? ''}, ${String(s.unchanged)} unchanged.`,
  )
  return `${lines.join('\n')}\n`
}
