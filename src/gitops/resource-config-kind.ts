import { TypeCompiler } from '@sinclair/typebox/compiler'
import { Value } from '@sinclair/typebox/value'
import type { ConfigCurrent, ConfigKind, ConfigTx } from '../feature/config-kinds.ts'
import type { FieldIssue } from '../kernel/errors.ts'
import { sql, type Db } from '../platform/db.ts'
import { anyRows } from '../platform/typed-rows.ts'
import { canonicalJson } from '../resources/canonical-json.ts'
import type { AnyKind } from '../resources/kind.ts'
import { ROW_COLUMNS, ResourceRow, type Row } from '../resources/row.ts'
import { splitSecrets } from '../resources/secrets.ts'
import type { Address, ResourceService } from '../resources/service.ts'
import { validationIssues } from '../resources/validation.ts'
import { checksumOf, type Tx } from '../resources/write-steps.ts'
import { ID_FIELDS, idDirectory, withIds, withIdsInTx, type IdDirectory } from './id-fields.ts'
import { resourceKey } from './resource-key.ts'
import { PACKAGE_FORBIDDEN_SECTIONS, sectionKinds, type SectionName } from './section-kinds.ts'

/*
 * The one ConfigKind adapter over every generic resource kind (`defineKind`): the same description
 * the CRUD routes come from gives the section's validation, references, checksum, export and
 * writes, and the writes go through the resource engine (`ResourceService.within`) with its
 * permission checks, secret sealing and version rows, inside the apply's transaction.
 *
 * A config body is the API's create body: `namespace` (namespaced kinds), `name`, the spec fields,
 * `is_active` when false. Export leaves out the fields equal to their defaults (apply fills them
 * again, so the checksum is the same) and every secret field: a secret field left out of a body
 * is left as it is on the platform, never cleared.
 */

/** The section of a kind (`llm_provider` → `llmProviders`), when documents carry it. */
export function sectionOfKind(kind: string): SectionName | undefined {
  return (Object.entries(sectionKinds) as [SectionName, string][]).find(([, k]) => k === kind)?.[0]
}

/** Each body's spec with defaults, computed once: an apply asks for references, then the checksum. */
const specs = new WeakMap<Record<string, unknown>, { spec: Record<string, unknown>; isActive: boolean }>()

/** The spec fields of a body with the kind's defaults, and whether it is active (read only: shared). */
function specOf(kind: AnyKind, body: Record<string, unknown>): { spec: Record<string, unknown>; isActive: boolean } {
  const known = specs.get(body)
  if (known !== undefined) return known
  const { namespace: _n, name: _name, is_active: active, ...rest } = body
  const out = {
    spec: Value.Default(kind.spec, structuredClone(rest)) as Record<string, unknown>,
    isActive: active !== false,
  }
  specs.set(body, out)
  return out
}

const addressOf = (kind: AnyKind, key: string): Address => {
  if (kind.addressing !== 'namespaced') return { name: key }
  const slash = key.indexOf('/')
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) }
}

/** What export holds of a row: address, the fields that differ from their defaults, no secret, names for ids. */
function configBody(
  kind: AnyKind,
  row: Row,
  defaults: Record<string, unknown>,
  dir: IdDirectory,
): Record<string, unknown> {
  const body: Record<string, unknown> =
    kind.addressing === 'namespaced' ? { namespace: row.namespace, name: row.name } : { name: row.name }
  const idFields = ID_FIELDS[kind.kind] ?? []
  for (const [field, value] of Object.entries(row.spec)) {
    if (kind.secrets.includes(field)) continue
    if (field in defaults && canonicalJson(defaults[field]) === canonicalJson(value)) continue
    const byId = idFields.find((f) => f.field === field)
    const name = byId !== undefined && typeof value === 'string' ? dir.nameOf(byId.kind, value) : undefined
    if (byId !== undefined && name !== undefined) body[byId.as] = name
    else body[field] = value
  }
  if (!row.is_active) body['is_active'] = false
  return body
}

export function resourceConfigKind(resources: ResourceService, kind: AnyKind): ConfigKind {
  const idFields = ID_FIELDS[kind.kind] ?? []
  // the names behind the id fields, as `list` last read them (the synchronous checksum needs them)
  const dir = idDirectory()
  const stored = new WeakMap<Record<string, unknown>, Record<string, unknown>>()
  /** The body as the API takes it (ids for names), computed once per body. */
  const apiBody = (body: Record<string, unknown>): Record<string, unknown> => {
    if (idFields.length === 0) return body
    let out = stored.get(body)
    if (out === undefined) stored.set(body, (out = withIds(idFields, body, (k, name) => dir.idOf(k, name))))
    return out
  }
  const section = sectionOfKind(kind.kind)
  if (section === undefined) throw new Error(`kind ${kind.kind} has no section in src/gitops/section-kinds.ts`)
  const createCheck = TypeCompiler.Compile(kind.createBody)
  const specCheck = TypeCompiler.Compile(kind.spec)
  const defaults = Value.Default(kind.spec, {}) as Record<string, unknown>
  const publicChecksum = (body: Record<string, unknown>): string => {
    const { spec, isActive } = specOf(kind, apiBody(body))
    return checksumOf(splitSecrets(kind, spec).spec, isActive)
  }
  const givesSecrets = (body: Record<string, unknown>) => kind.secrets.some((f) => f in body)
  // the row each listed item came from: `unchanged` compares secrets without reading it again
  const rowOf = new WeakMap<ConfigCurrent, Row>()
  return {
    kind: kind.kind,
    section,
    packageable: !PACKAGE_FORBIDDEN_SECTIONS.includes(section),
    secretFields: kind.secrets,
    keyOf: (body) => resourceKey(kind.kind, body),
    refs(body) {
      let refs: { kind: string; ref: string }[]
      try {
        refs = kind.refs(specOf(kind, apiBody(body)).spec as never)
      } catch {
        return [] // a body that does not have its kind's shape refers to nothing; validate says why
      }
      for (const f of idFields) {
        const name = body[f.as]
        if (typeof name === 'string') refs.push({ kind: f.kind, ref: name })
      }
      return refs.map((r) => {
        // a manifest names every kind as `namespace/name`; a named kind's key is the bare name
        const target = resources.kinds.get(r.kind)
        const bare = target?.addressing === 'named' && r.ref.includes('/')
        return { kind: r.kind, key: bare ? r.ref.slice(r.ref.lastIndexOf('/') + 1) : r.ref }
      })
    },
    // secret values are not in the stored checksum: a body giving one is compared by `unchanged`
    checksum: (body) => (givesSecrets(body) ? `${publicChecksum(body)}+secrets` : publicChecksum(body)),
    async unchanged(tx, body, current) {
      if (publicChecksum(body) !== current.checksum) return false
      const w = resources.within(tx as Tx)
      const row = rowOf.get(current)
      const stored =
        (row === undefined ? await w.secretsAt(kind, addressOf(kind, current.key)) : w.openSecrets(kind, row)) ?? {}
      return kind.secrets.every((f) => {
        if (!(f in body)) return true
        const v = body[f]
        const wanted = typeof v === 'string' && v !== '' ? v : null
        return wanted === (stored[f] ?? null)
      })
    },
    async validate(_p, named) {
      const body = apiBody(named)
      const issues: FieldIssue[] = validationIssues(createCheck, body)
      if (issues.length > 0) return issues
      const { spec } = specOf(kind, body)
      const specIssues = validationIssues(specCheck, spec)
      if (specIssues.length > 0) return specIssues
      return (await kind.validate(spec as never)).map((i) => ({
        ...i,
        path: i.path.replace(/^\//, '').replace(/\//g, '.'),
      }))
    },
    async list(tx: ConfigTx | Db): Promise<ConfigCurrent[]> {
      if (idFields.length > 0)
        await dir.load(
          tx,
          idFields.map((f) => f.kind),
        )
      const rows = await anyRows(
        tx,
        ResourceRow,
        sql.unsafe`select ${ROW_COLUMNS} from resources where kind = ${kind.kind}
          order by namespace collate "C", name collate "C"`,
      )
      return rows.map((row) => {
        let body: Record<string, unknown> | undefined
        const current: ConfigCurrent = {
          key: kind.addressing === 'namespaced' ? `${row.namespace}/${row.name}` : row.name,
          // built when read (export, a plan's field diff): a no-op apply compares checksums only
          get body() {
            return (body ??= configBody(kind, row, defaults, dir))
          },
          managedBy: row.managed_by,
          checksum: row.checksum,
        }
        if (kind.secrets.length > 0) rowOf.set(current, row)
        return current
      })
    },
    async write(tx, p, named, options) {
      const body = idFields.length === 0 ? named : await withIdsInTx(tx, idFields, named)
      const w = resources.within(tx as Tx)
      if (options.current === undefined) {
        await w.create(p, kind, body, { managedBy: options.managedBy })
        return w.takeAfterCommit()
      }
      const { spec, isActive } = specOf(kind, body)
      // the body replaces the item: a field it no longer holds goes (secret fields excepted: kept)
      const patch: Record<string, unknown> = { ...spec, is_active: isActive }
      for (const field of Object.keys(options.current.body)) {
        const spelled = idFields.find((f) => f.as === field)?.field ?? field
        if (!(spelled in patch) && spelled in kind.spec.properties) patch[spelled] = undefined
      }
      await w.update(p, kind, addressOf(kind, options.current.key), patch, { managedBy: options.managedBy })
      return w.takeAfterCommit()
    },
    async remove(tx, p, key) {
      const w = resources.within(tx as Tx)
      await w.remove(p, kind, addressOf(kind, key))
      return w.takeAfterCommit()
    },
  }
}

/** The adapters of every kind of the engine. */
export const resourceConfigKinds = (resources: ResourceService): ConfigKind[] =>
  [...resources.kinds.values()].map((k) => resourceConfigKind(resources, k))
