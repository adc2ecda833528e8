import { diffFields, type FieldChange } from './diff-fields.ts'

/** A resource as the document wants it: its body with defaults applied, as apply would write it. */
export interface DesiredResource {
  kind: string
  key: string
  body: Record<string, unknown>
  /** The checksum apply would store; equal to the current one means unchanged without a field diff. */
  checksum?: string
}

/** A resource as the platform has it; secret fields hold their current values (for comparing only: never shown). */
export interface CurrentResource {
  kind: string
  key: string
  body: Record<string, unknown>
  /** `config`, `pkg:<name>`, or null when created through the API. */
  managedBy: string | null
  checksum?: string
}

export type PlanAction = 'create' | 'update' | 'unchanged' | 'conflict' | 'delete'

export interface PlannedChange {
  action: PlanAction
  kind: string
  key: string
  /** create: the fields set; update: what differs; otherwise empty. */
  fields: FieldChange[]
  warning?: string
}

export interface Plan {
  /** Desired resources in the order given (apply order), then deletions. */
  changes: PlannedChange[]
  /** A conflict counts as unchanged: it is left as it is (and warned about). */
  summary: { created: number; updated: number; unchanged: number; deleted: number }
  warnings: string[]
}

export interface PlanInput {
  desired: readonly DesiredResource[]
  current: readonly CurrentResource[]
  /** Who applies: `config` or `pkg:<name>`. */
  owner: string
  /** Take over resources managed by someone else (or no one). */
  force?: boolean
  /** Each kind's secret fields (`Kind.secrets`). */
  secretFields?: (kind: string) => readonly string[]
}

const id = (r: { kind: string; key: string }) => `${r.kind} ${r.key}`

/**
 * What applying a document would do, resource by resource, like `terraform plan`: create what is
 * missing, update what differs (field by field, secrets masked), leave alone what is equal, refuse
 * to touch what someone else manages unless forced (a warning naming it), and delete what this
 * owner manages that the document no longer has. Pure: the caller reads the current resources.
 */
export function planChanges(input: PlanInput): Plan {
  const secretsOf = input.secretFields ?? (() => [])
  const current = new Map(input.current.map((c) => [id(c), c]))
  const wanted = new Set(input.desired.map(id))
  const changes: PlannedChange[] = []
  const warnings: string[] = []
  for (const d of input.desired) {
    const c = current.get(id(d))
    const base = { kind: d.kind, key: d.key }
    if (c === undefined) {
      changes.push({ ...base, action: 'create', fields: diffFields({}, d.body, secretsOf(d.kind)) })
      continue
    }
    const ours = c.managedBy === input.owner
    if (!ours && input.force !== true) {
      const who = c.managedBy === null ? 'it was created through the API' : `it is managed by ${c.managedBy}`
      const warning = `${id(d)} exists and is not managed by ${input.owner} (${who}); left as it is (apply with force to take it over)`
      warnings.push(warning)
      changes.push({ ...base, action: 'conflict', fields: [], warning })
      continue
    }
    const sameChecksum = d.checksum !== undefined && d.checksum === c.checksum
    const fields = sameChecksum ? [] : diffFields(c.body, d.body, secretsOf(d.kind))
    // taking a resource over changes who manages it even when every field is equal
    if (!ours) fields.unshift({ path: 'managed_by', change: 'changed', before: c.managedBy, after: input.owner })
    changes.push({ ...base, action: fields.length === 0 ? 'unchanged' : 'update', fields })
  }
  for (const c of input.current)
    if (c.managedBy === input.owner && !wanted.has(id(c)))
      changes.push({ kind: c.kind, key: c.key, action: 'delete', fields: [] })
  const count = (...actions: PlanAction[]) => changes.filter((c) => actions.includes(c.action)).length
  return {
    changes,
    summary: {
      created: count('create'),
      updated: count('update'),
      unchanged: count('unchanged', 'conflict'),
      deleted: count('delete'),
    },
    warnings,
  }
}
