import { createHash } from 'node:crypto'
import type { Static, TObject } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { Value } from '@sinclair/typebox/value'
import { UniqueIntegrityConstraintViolationError } from 'slonik'
import { can, type Principal } from '../auth/principal.ts'
import { conflict, forbidden, invalid, notFound, type FieldIssue } from '../kernel/errors.ts'
import { secretAad, type SecretBox } from '../kernel/crypto.ts'
import type { Logger } from '../kernel/log.ts'
import { sql, type Db } from '../platform/db.ts'
import type { AnyKind, Kind } from './kind.ts'
import { canOnResource, resourcePermission, type ResourceMeta } from './permissions.ts'
import { canonicalJson } from './canonical-json.ts'
import { mayCreateIn } from '../namespaces/policy.ts'
import { claimNamespace, standingIn } from '../namespaces/store.ts'

/*
 * The generic resource engine over the one `resources` table. Every kind is handled by the same
 * code; what differs comes from its description. Permissions are checked here, at execution time,
 * whoever calls (HTTP route, config apply, package install).
 */
export type Address = { namespace: string; name: string } | { id: string } | { name: string }

/**
 * One resource as the API returns it, typed by its kind's spec: `get(p, agentKind, …)` gives
 * `agent.system_prompt` as a string. Secret fields are absent (`has_<field>` instead) although the
 * spec type lists them; the index signature keeps untyped reads (`record['x']`) working.
 */
export type ResourceRecord<S extends object = Record<string, unknown>> = S & {
  id: string
  name: string
  namespace?: string
  managed_by?: string | null
  owner_id?: string | null
  version?: number
  is_active?: boolean
} & Record<string, unknown>

export interface ListOptions {
  namespaces?: string[]
  limit?: number
  offset?: number
}

export interface ExpandOptions {
  /**
   * Namespaces a wildcard may pick resources from (those the agent's owner owns or was granted).
   * Exact `ns/name` patterns are not limited by it: naming a resource is a deliberate choice,
   * and the caller's read permission still applies. Unset: no limit (the caller's reads only).
   */
  wildcardNamespaces?: ReadonlySet<string>
}

export interface WriteOptions {
  /** `config`, `pkg:<name>`; API writes pass null, which detaches a managed resource (detach-on-edit). */
  managedBy?: string | null
}

export type ApplyAction = 'created' | 'updated' | 'unchanged'

interface Row {
  id: string
  kind: string
  namespace: string
  name: string
  spec: Record<string, unknown>
  secrets: Record<string, string>
  owner_id: string | null
  managed_by: string | null
  checksum: string
  version: number
  is_active: boolean
  created_at: string
  updated_at: string
}

interface Compiled {
  spec: TypeCheck<TObject>
  create: TypeCheck<TObject>
  update: TypeCheck<TObject>
}

const ROW_COLUMNS = sql.unsafe`id, kind, namespace, name, spec, secrets, owner_id, managed_by, checksum, version, is_active, created_at, updated_at`

export interface ResourceService {
  kinds: ReadonlyMap<string, AnyKind>
  list<S extends TObject>(p: Principal, kind: Kind<S>, options?: ListOptions): Promise<{ items: ResourceRecord<Static<S>>[]; total: number }>
  get<S extends TObject>(p: Principal, kind: Kind<S>, address: Address): Promise<ResourceRecord<Static<S>>>
  create<S extends TObject>(p: Principal, kind: Kind<S>, body: Record<string, unknown>, options?: WriteOptions): Promise<ResourceRecord<Static<S>>>
  update<S extends TObject>(p: Principal, kind: Kind<S>, address: Address, patch: Record<string, unknown>, options?: WriteOptions): Promise<ResourceRecord<Static<S>>>
  /** For the platform's own use (no permission check): one resource by id, inactive ones included; null when absent. */
  byId<S extends TObject>(kind: Kind<S>, id: string): Promise<ResourceRecord<Static<S>> | null>
  /** For the platform's own use (no permission check): the resources named `namespace/name`, inactive ones included, in `refs` order. */
  loadMany<S extends TObject>(kind: Kind<S>, refs: readonly string[]): Promise<ResourceRecord<Static<S>>[]>
  remove(p: Principal, kind: AnyKind, address: Address): Promise<void>
  versions(p: Principal, kind: AnyKind, address: Address): Promise<{ version: number; fields: unknown; created_by: string | null; created_at: string }[]>
  /** Create or update to match `body`, skipping unchanged resources by checksum; refuses resources managed by someone else unless forced. */
  apply(p: Principal, kind: AnyKind, body: Record<string, unknown>, options: { managedBy: string; force?: boolean; dryRun?: boolean }): Promise<{ action: ApplyAction; record?: ResourceRecord; warning?: string }>
  /** Wildcard expansion: active resources the principal may read that match `ns/name`, `ns/*` or `*\/*`. */
  expand(p: Principal, kind: AnyKind, patterns: readonly string[], options?: ExpandOptions): Promise<{ namespace: string; name: string }[]>
  /** The decrypted secret fields of a resource (for the platform's own use, never for responses). */
  secretsOf(kind: AnyKind, id: string): Promise<Record<string, string>>
}

export function createResourceService(deps: { db: Db; log: Logger; kinds: readonly AnyKind[]; box: SecretBox }): ResourceService {
  const { db, box } = deps
  const kinds = new Map(deps.kinds.map((k) => [k.kind, k]))
  const compiled = new Map<string, Compiled>(
    deps.kinds.map((k) => [k.kind, { spec: TypeCompiler.Compile(k.spec), create: TypeCompiler.Compile(k.createBody), update: TypeCompiler.Compile(k.updateBody) }]),
  )
  const checks = (kind: AnyKind): Compiled => compiled.get(kind.kind) as Compiled

  const aad = (kind: AnyKind, id: string, field: string) => secretAad(kind.kind, id, field)
  const meta = (row: Row): ResourceMeta => ({ namespace: row.namespace, name: row.name, ownerId: row.owner_id })

  function toRecord(kind: AnyKind, row: Row): ResourceRecord {
    const spec = Value.Default(kind.spec, structuredClone(row.spec)) as Record<string, unknown>
    const record: ResourceRecord = { id: row.id, name: row.name }
    if (kind.addressing === 'namespaced') record['namespace'] = row.namespace
    for (const [key, value] of Object.entries(spec)) {
      if (kind.secrets.includes(key)) continue
      record[key] = value
    }
    for (const key of kind.secrets) record[`has_${key}`] = row.secrets[key] !== undefined
    return Object.assign(record, {
      managed_by: row.managed_by,
      owner_id: row.owner_id,
      version: row.version,
      is_active: row.is_active,
      created_at: row.created_at,
      updated_at: row.updated_at,
    })
  }

  function whereAddress(kind: AnyKind, address: Address) {
    if ('id' in address) {
      if (!/^[0-9a-f-]{36}$/i.test(address.id)) return null
      return sql.unsafe`kind = ${kind.kind} and id = ${address.id}::uuid`
    }
    const ns = 'namespace' in address ? address.namespace : ''
    return sql.unsafe`kind = ${kind.kind} and namespace = ${ns} and name = ${address.name}`
  }

  const describe = (kind: AnyKind, address: Address): string =>
    'id' in address ? `${kind.kind} ${address.id}` : 'namespace' in address ? `${kind.kind} ${address.namespace}/${address.name}` : `${kind.kind} ${address.name}`

  async function findRow(kind: AnyKind, address: Address): Promise<Row | null> {
    const where = whereAddress(kind, address)
    if (where === null) return null
    return (await db.maybeOne(sql.unsafe`select ${ROW_COLUMNS} from resources where ${where}`)) as Row | null
  }

  /** A resource the principal may not read answers 404, like one that does not exist. */
  async function visibleRow(p: Principal, kind: AnyKind, address: Address): Promise<Row> {
    const row = await findRow(kind, address)
    if (row === null || !canOnResource(p, kind, 'read', meta(row))) throw notFound(`${describe(kind, address)} not found`)
    return row
  }

  function validationIssues(check: TypeCheck<TObject>, value: unknown): FieldIssue[] {
    return [...check.Errors(value)].map((e) => ({ path: e.path.replace(/^\//, '').replace(/\//g, '.'), message: e.message }))
  }

  async function assertValid(kind: AnyKind, spec: Record<string, unknown>): Promise<void> {
    const issues = validationIssues(checks(kind).spec, spec)
    if (issues.length === 0) issues.push(...(await kind.validate(spec as Static<TObject>)))
    if (issues.length > 0) throw invalid(`invalid ${kind.kind}`, issues)
  }

  function assertAdminFields(p: Principal, kind: AnyKind, action: 'create' | 'update', m: ResourceMeta, before: Record<string, unknown>, after: Record<string, unknown>): void {
    if (kind.adminFields.length === 0) return
    const changed = kind.adminFields.filter((f) => canonicalJson(before[f]) !== canonicalJson(after[f]))
    if (changed.length > 0 && !can(p, resourcePermission(kind, action, m, 'all'))) {
      throw forbidden(`only administrators may set ${changed.join(', ')}`, 'resource.admin_field')
    }
  }

  /** Splits write-only fields out of the spec; null clears a secret, a string replaces it, absent keeps it. */
  function splitSecrets(kind: AnyKind, input: Record<string, unknown>): { spec: Record<string, unknown>; secretInput: Record<string, string | null> } {
    const spec = { ...input }
    const secretInput: Record<string, string | null> = {}
    for (const key of kind.secrets) {
      if (key in spec) {
        const v = spec[key]
        secretInput[key] = typeof v === 'string' && v !== '' ? v : null
        delete spec[key]
      }
    }
    return { spec, secretInput }
  }

  function sealSecrets(kind: AnyKind, id: string, existing: Record<string, string>, input: Record<string, string | null>): Record<string, string> {
    const out = { ...existing }
    for (const [key, value] of Object.entries(input)) {
      if (value === null) delete out[key]
      else out[key] = box.encrypt(value, aad(kind, id, key))
    }
    return out
  }

  /** Checksum of the public fields; secrets are compared by decrypting (apply), so no digest of them is stored. */
  function checksumOf(spec: Record<string, unknown>, isActive: boolean): string {
    return createHash('sha256').update(canonicalJson({ spec, is_active: isActive })).digest('hex')
  }

  const versionedFields = (kind: AnyKind, spec: Record<string, unknown>) => Object.fromEntries(kind.versioned.map((f) => [f, spec[f] ?? null]))

  function mapUnique(err: unknown, what: string): never {
    if (err instanceof UniqueIntegrityConstraintViolationError) throw conflict(`${what} already exists`, 'resource.exists')
    throw err
  }

  async function clearExclusiveFlags(tx: Db | Parameters<Parameters<Db['transaction']>[0]>[0], kind: AnyKind, id: string, spec: Record<string, unknown>) {
    for (const flag of kind.exclusiveFlags) {
      if (spec[flag] !== true) continue
      await tx.query(sql.unsafe`
        update resources set spec = jsonb_set(spec, ${sql.array([flag], 'text')}, 'false'::jsonb), updated_at = now()
        where kind = ${kind.kind} and id <> ${id}::uuid and (spec ->> ${flag}) = 'true'`)
    }
  }

  /**
   * Refuses a create in a namespace the principal may not use, and claims the namespace for the
   * principal when nobody holds it yet (in the resource's own transaction: two first writers race
   * on the namespaces primary key, the loser is checked again like anyone else).
   */
  async function admitToNamespace(tx: Parameters<Parameters<Db['transaction']>[0]>[0], p: Principal, kind: AnyKind, m: ResourceMeta): Promise<void> {
    const anyNamespace = can(p, resourcePermission(kind, 'create', m, 'all'))
    let standing = await standingIn(tx, m.namespace, p.userId)
    if (!standing.exists) {
      if (await claimNamespace(tx, m.namespace, p.userId)) return
      standing = await standingIn(tx, m.namespace, p.userId) // claimed by someone else a moment ago
    }
    if (!mayCreateIn(anyNamespace, standing)) {
      throw forbidden(`not allowed to create in namespace ${m.namespace}: it belongs to another user (its owner or an admin can grant it to you)`, 'namespace.forbidden')
    }
  }

  async function create(p: Principal, kind: AnyKind, body: Record<string, unknown>, options: WriteOptions = {}): Promise<ResourceRecord> {
    const bodyIssues = validationIssues(checks(kind).create, body)
    if (bodyIssues.length > 0) throw invalid(`invalid ${kind.kind}`, bodyIssues)
    const { namespace: nsIn, name, is_active: activeIn, ...rest } = body
    const namespace = kind.addressing === 'namespaced' ? String(nsIn ?? 'default') : ''
    const m: ResourceMeta = { namespace, name: String(name), ownerId: p.userId }
    if (!canOnResource(p, kind, 'create', m)) {
      throw kind.adminOnly ? forbidden(`${kind.plural} are admin-only`, 'auth.admin_only') : forbidden(`not allowed to create ${kind.kind} ${namespace ? `${namespace}/` : ''}${String(name)}`)
    }
    const withDefaults = Value.Default(kind.spec, structuredClone(rest)) as Record<string, unknown>
    await assertValid(kind, withDefaults)
    assertAdminFields(p, kind, 'create', m, Value.Default(kind.spec, {}) as Record<string, unknown>, withDefaults)
    const { spec, secretInput } = splitSecrets(kind, withDefaults)
    const isActive = activeIn !== false
    const checksum = checksumOf(spec, isActive)
    const row = await db
      .transaction(async (tx) => {
        if (kind.addressing === 'namespaced') await admitToNamespace(tx, p, kind, m)
        const id = String(await tx.oneFirst(sql.unsafe`select gen_random_uuid()`))
        const secrets = sealSecrets(kind, id, {}, secretInput)
        const inserted = (await tx.one(sql.unsafe`
          insert into resources (id, kind, namespace, name, spec, secrets, owner_id, managed_by, checksum, is_active)
          values (${id}::uuid, ${kind.kind}, ${namespace}, ${String(name)}, ${sql.jsonb(spec as never)}, ${sql.jsonb(secrets)},
                  ${p.userId}::uuid, ${options.managedBy ?? null}, ${checksum}, ${isActive})
          returning ${ROW_COLUMNS}`)) as Row
        if (kind.versioned.length > 0) {
          await tx.query(sql.unsafe`insert into resource_versions (resource_id, version, fields, created_by)
            values (${id}::uuid, 1, ${sql.jsonb(versionedFields(kind, spec) as never)}, ${p.userId}::uuid)`)
        }
        await clearExclusiveFlags(tx, kind, id, spec)
        return inserted
      })
      .catch((err: unknown) => mapUnique(err, `${kind.kind} ${namespace ? `${namespace}/` : ''}${String(name)}`))
    deps.log.info({ kind: kind.kind, namespace, name, by: p.userId }, 'resource created')
    return toRecord(kind, row)
  }

  async function update(p: Principal, kind: AnyKind, address: Address, patch: Record<string, unknown>, options: WriteOptions = {}): Promise<ResourceRecord> {
    const patchIssues = validationIssues(checks(kind).update, patch)
    if (patchIssues.length > 0) throw invalid(`invalid ${kind.kind}`, patchIssues)
    const row = await visibleRow(p, kind, address)
    if (!canOnResource(p, kind, 'update', meta(row))) throw forbidden(`not allowed to update ${describe(kind, address)}`)
    const { is_active: activeIn, ...fields } = patch
    const { spec: specPatch, secretInput } = splitSecrets(kind, fields)
    const before = Value.Default(kind.spec, structuredClone(row.spec)) as Record<string, unknown>
    const merged = { ...before, ...specPatch }
    const withSecrets = { ...merged }
    for (const key of kind.secrets) withSecrets[key] = key in secretInput ? secretInput[key] : row.secrets[key] === undefined ? null : 'set'
    await assertValid(kind, withSecrets)
    assertAdminFields(p, kind, 'update', meta(row), before, merged)
    const isActive = typeof activeIn === 'boolean' ? activeIn : row.is_active
    const versionChanged = kind.versioned.some((f) => canonicalJson(before[f]) !== canonicalJson(merged[f]))
    const managedBy = options.managedBy === undefined ? null : options.managedBy
    const updated = await db.transaction(async (tx) => {
      const secrets = sealSecrets(kind, row.id, row.secrets, secretInput)
      const checksum = checksumOf(merged, isActive)
      const next = (await tx.one(sql.unsafe`
        update resources set spec = ${sql.jsonb(merged as never)}, secrets = ${sql.jsonb(secrets)}, is_active = ${isActive},
          managed_by = ${managedBy}, checksum = ${checksum}, version = version + ${versionChanged ? 1 : 0}, updated_at = now()
        where id = ${row.id}::uuid
        returning ${ROW_COLUMNS}`)) as Row
      if (versionChanged) {
        await tx.query(sql.unsafe`insert into resource_versions (resource_id, version, fields, created_by)
          values (${row.id}::uuid, ${next.version}, ${sql.jsonb(versionedFields(kind, merged) as never)}, ${p.userId}::uuid)`)
      }
      await clearExclusiveFlags(tx, kind, row.id, merged)
      return next
    })
    deps.log.info({ kind: kind.kind, id: row.id, by: p.userId, detached: row.managed_by !== null && managedBy === null }, 'resource updated')
    return toRecord(kind, updated)
  }

  async function remove(p: Principal, kind: AnyKind, address: Address): Promise<void> {
    const row = await visibleRow(p, kind, address)
    if (!canOnResource(p, kind, 'delete', meta(row))) throw forbidden(`not allowed to delete ${describe(kind, address)}`)
    await db.query(sql.unsafe`delete from resources where id = ${row.id}::uuid`)
    deps.log.info({ kind: kind.kind, id: row.id, by: p.userId }, 'resource deleted')
  }

  async function list(p: Principal, kind: AnyKind, options: ListOptions = {}) {
    // An admin-only area answers 403 to others (an empty 200 would suggest they may use it).
    if (kind.adminOnly && !can(p, resourcePermission(kind, 'read', { namespace: '*', name: '*' }, 'all'))) {
      throw forbidden(`${kind.plural} are admin-only`, 'auth.admin_only')
    }
    const limit = options.limit ?? 100
    const offset = options.offset ?? 0
    const nsFilter = options.namespaces !== undefined && options.namespaces.length > 0 ? sql.unsafe`and namespace = any(${sql.array(options.namespaces, 'text')})` : sql.unsafe``
    const rows = (await db.any(sql.unsafe`select ${ROW_COLUMNS} from resources where kind = ${kind.kind} ${nsFilter} order by namespace, name`)) as readonly Row[]
    const visible = rows.filter((r) => canOnResource(p, kind, 'read', meta(r)))
    return { items: visible.slice(offset, offset + limit).map((r) => toRecord(kind, r)), total: visible.length }
  }

  async function apply(p: Principal, kind: AnyKind, body: Record<string, unknown>, options: { managedBy: string; force?: boolean; dryRun?: boolean }) {
    const namespace = kind.addressing === 'namespaced' ? String(body['namespace'] ?? 'default') : ''
    const address: Address = kind.addressing === 'namespaced' ? { namespace, name: String(body['name']) } : { name: String(body['name']) }
    const row = await findRow(kind, address)
    if (row === null) {
      if (options.dryRun === true) return { action: 'created' as const }
      return { action: 'created' as const, record: await create(p, kind, body, { managedBy: options.managedBy }) }
    }
    if (row.managed_by !== options.managedBy && options.force !== true) {
      return { action: 'unchanged' as const, warning: `${describe(kind, address)} exists and is not managed by ${options.managedBy}; left as it is` }
    }
    const { namespace: _n, name: _name, is_active: activeIn, ...rest } = body
    const desired = Value.Default(kind.spec, structuredClone(rest)) as Record<string, unknown>
    const { spec, secretInput } = splitSecrets(kind, desired)
    const secretsSame = kind.secrets.every((k) => (secretInput[k] ?? null) === (row.secrets[k] === undefined ? null : box.decrypt(row.secrets[k], aad(kind, row.id, k))))
    const isActive = activeIn !== false
    if (secretsSame && row.checksum === checksumOf(spec, isActive)) return { action: 'unchanged' as const }
    if (options.dryRun === true) return { action: 'updated' as const }
    const patch: Record<string, unknown> = { ...desired, is_active: isActive }
    return { action: 'updated' as const, record: await update(p, kind, address, patch, { managedBy: options.managedBy }) }
  }

  async function expand(p: Principal, kind: AnyKind, patterns: readonly string[], options: ExpandOptions = {}) {
    const rows = (await db.any(sql.unsafe`select ${ROW_COLUMNS} from resources where kind = ${kind.kind} and is_active order by namespace, name`)) as readonly Row[]
    const within = options.wildcardNamespaces
    const matchers = patterns.map((pat) => {
      const [ns, name] = pat.split('/')
      const wildcard = ns === '*' || name === '*'
      return (r: Row) =>
        (ns === '*' || ns === r.namespace) && (name === '*' || name === r.name) && (!wildcard || within === undefined || within.has(r.namespace))
    })
    return rows.filter((r) => matchers.some((m) => m(r)) && canOnResource(p, kind, 'read', meta(r))).map((r) => ({ namespace: r.namespace, name: r.name }))
  }

  async function versions(p: Principal, kind: AnyKind, address: Address) {
    const row = await visibleRow(p, kind, address)
    const rows = await db.any(sql.unsafe`select version, fields, created_by, created_at from resource_versions where resource_id = ${row.id}::uuid order by version desc`)
    return rows as unknown as { version: number; fields: unknown; created_by: string | null; created_at: string }[]
  }

  async function byId(kind: AnyKind, id: string): Promise<ResourceRecord | null> {
    const row = await findRow(kind, { id })
    return row === null ? null : toRecord(kind, row)
  }

  async function loadMany(kind: AnyKind, refs: readonly string[]): Promise<ResourceRecord[]> {
    if (refs.length === 0) return []
    const rows = (await db.any(
      sql.unsafe`select ${ROW_COLUMNS} from resources where kind = ${kind.kind} and (namespace || '/' || name) = any(${sql.array([...refs], 'text')})`,
    )) as readonly Row[]
    const byRef = new Map(rows.map((r) => [`${r.namespace}/${r.name}`, r]))
    return refs.flatMap((ref) => {
      const row = byRef.get(ref)
      return row === undefined ? [] : [toRecord(kind, row)]
    })
  }

  async function secretsOf(kind: AnyKind, id: string): Promise<Record<string, string>> {
    const row = await findRow(kind, { id })
    if (row === null) throw notFound(`${kind.kind} ${id} not found`)
    return Object.fromEntries(Object.entries(row.secrets).map(([k, v]) => [k, box.decrypt(v, aad(kind, row.id, k))]))
  }

  // The engine works on any kind; the typed signatures of ResourceService only narrow what it returns.
  return {
    kinds,
    list: list as ResourceService['list'],
    get: (async (p: Principal, kind: AnyKind, address: Address) => toRecord(kind, await visibleRow(p, kind, address))) as ResourceService['get'],
    create: create as ResourceService['create'],
    update: update as ResourceService['update'],
    byId: byId as ResourceService['byId'],
    loadMany: loadMany as ResourceService['loadMany'],
    remove,
    versions,
    apply,
    expand,
    secretsOf,
  }
}
