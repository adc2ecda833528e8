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

/** The spec fields of a body with the kind's defaults, and whether it is active. */
function specOf(kind: AnyKind, body: Record<string, unknown>): { spec: Record<string, unknown>; isActive: boolean } {
  const { namespace: _n, name: _name, is_active: active, ...rest } = body
  return {
    spec: Value.Default(kind.spec, structuredClone(rest)) as Record<string, unknown>,
    isActive: active !== false,
  }
}

const addressOf = (kind: AnyKind, key: string): Address => {
  if (kind.addressing !== 'namespaced') return { name: key }
  const slash = key.indexOf('/')
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) }
}

/** What export holds of a row: address, the fields that differ from their defaults, no secret. */
function configBody(kind: AnyKind, row: Row, defaults: Record<string, unknown>): Record<string, unknown> {
  const body: Record<string, unknown> =
    kind.addressing === 'namespaced' ? { namespace: row.namespace, name: row.name } : { name: row.name }
  for (const [field, value] of Object.entries(row.spec)) {
    if (kind.secrets.includes(field)) continue
    if (field in defaults && canonicalJson(defaults[field]) === canonicalJson(value)) continue
    body[field] = value
  }
  if (!row.is_active) body['is_active'] = false
  return body
}

export function resourceConfigKind(resources: ResourceService, kind: AnyKind): ConfigKind {
  const section = sectionOfKind(kind.kind)
  if (section === undefined) throw new Error(`kind ${kind.kind} has no section in src/gitops/section-kinds.ts`)
  const createCheck = TypeCompiler.Compile(kind.createBody)
  const specCheck = TypeCompiler.Compile(kind.spec)
  const defaults = Value.Default(kind.spec, {}) as Record<string, unknown>
  const publicChecksum = (body: Record<string, unknown>): string => {
    const { spec, isActive } = specOf(kind, body)
    return checksumOf(splitSecrets(kind, spec).spec, isActive)
  }
  const givesSecrets = (body: Record<string, unknown>) => kind.secrets.some((f) => f in body)
  return {
    kind: kind.kind,
    section,
    packageable: !PACKAGE_FORBIDDEN_SECTIONS.includes(section),
    secretFields: kind.secrets,
    keyOf: (body) => resourceKey(kind.kind, body),
    refs(body) {
      let refs: { kind: string; ref: string }[]
      try {
        refs = kind.refs(specOf(kind, body).spec as never)
      } catch {
        return [] // a body that does not have its kind's shape refers to nothing; validate says why
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
      const stored = (await resources.within(tx as Tx).secretsAt(kind, addressOf(kind, current.key))) ?? {}
      return kind.secrets.every((f) => {
        if (!(f in body)) return true
        const v = body[f]
        const wanted = typeof v === 'string' && v !== '' ? v : null
        return wanted === (stored[f] ?? null)
      })
    },
    async validate(_p, body) {
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
      const rows = await anyRows(
        tx,
        ResourceRow,
        sql.unsafe`select ${ROW_COLUMNS} from resources where kind = ${kind.kind}
          order by namespace collate "C", name collate "C"`,
      )
      return rows.map((row) => ({
        key: kind.addressing === 'namespaced' ? `${row.namespace}/${row.name}` : row.name,
        body: configBody(kind, row, defaults),
        managedBy: row.managed_by,
        checksum: row.checksum,
      }))
    },
    async write(tx, p, body, options) {
      const w = resources.within(tx as Tx)
      if (options.current === undefined) {
        await w.create(p, kind, body, { managedBy: options.managedBy })
        return w.takeAfterCommit()
      }
      const { spec, isActive } = specOf(kind, body)
      // the body replaces the item: a field it no longer holds goes (secret fields excepted: kept)
      const patch: Record<string, unknown> = { ...spec, is_active: isActive }
      for (const field of Object.keys(options.current.body))
        if (!(field in patch) && field in kind.spec.properties) patch[field] = undefined
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
