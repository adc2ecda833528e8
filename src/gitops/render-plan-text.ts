import type { FieldChange } from './diff-fields.ts'
import type { Plan, PlanAction } from './plan.ts'

export interface PlanTextOptions {
  /** ANSI colours (a terminal); plain text otherwise. */
  color?: boolean
  /** List unchanged resources too (`= kind key`); on by default. */
  showUnchanged?: boolean
}

const SIGN: Record<PlanAction, string> = { create: '+', update: '~', unchanged: '=', conflict: '!', delete: '-' }
const FIELD_SIGN: Record<FieldChange['change'], string> = { added: '+', changed: '~', removed: '-' }
const COLOR: Record<string, string> = { '+': '32', '~': '33', '-': '31', '!': '35', '=': '2' }
const MAX_VALUE = 60

/** A value on one short line: long text is cut, text of several lines says how many. */
function shown(v: unknown): string {
  if (typeof v === 'string' && v.includes('\n')) return `(${String(v.split('\n').length)} lines)`
  const text = JSON.stringify(v) ?? 'null'
  return text.length > MAX_VALUE ? `${text.slice(0, MAX_VALUE - 1)}…` : text
}

function fieldLine(f: FieldChange): string {
  if (f.change === 'added') return `${f.path} = ${shown(f.after)}`
  if (f.change === 'removed') return `${f.path} = ${shown(f.before)}`
  return `${f.path}: ${shown(f.before)} → ${shown(f.after)}`
}

/**
 * A plan as text, like `terraform plan`: one line per resource with its sign (+ create, ~ update,
 * = unchanged, ! conflict, - delete), the fields under creations and updates, and a summary line.
 */
export function renderPlanText(plan: Plan, options: PlanTextOptions = {}): string {
  const paint = (sign: string, text: string) =>
    options.color === true ? `\x1b[${COLOR[sign] ?? '0'}m${text}\x1b[0m` : text
  const lines: string[] = []
  for (const c of plan.changes) {
    if (c.action === 'unchanged' && options.showUnchanged === false) continue
    const sign = SIGN[c.action]
    const head = `  ${sign} ${c.kind} ${c.key}`
    // the warning names the resource for the logs; under its own heading the name is not repeated
    const named = `${c.kind} ${c.key} `
    const warning = c.warning?.startsWith(named) === true ? c.warning.slice(named.length) : c.warning
    lines.push(paint(sign, warning === undefined ? head : `${head}: ${warning}`))
    for (const f of c.fields) lines.push(paint(FIELD_SIGN[f.change], `      ${FIELD_SIGN[f.change]} ${fieldLine(f)}`))
  }
  const s = plan.summary
  const total = s.created + s.updated + s.deleted
  lines.push(
    '',
    total === 0
      ? `No changes: ${String(s.unchanged)} unchanged.`
      : `Plan: ${String(s.created)} to create, ${String(s.updated)} to update, ${String(s.deleted)} to delete, ${String(s.unchanged)} unchanged.`,
  )
  return `${lines.join('\n')}\n`
}
