import type { Principal } from '../auth/principal.ts'
import type { AfterCommit, ConfigCurrent, ConfigKind, ConfigTx } from '../feature/config-kinds.ts'
import type { ServiceContext } from '../feature/define.ts'
import { AppError } from '../kernel/errors.ts'
import { sql, transaction } from '../platform/db.ts'
import { diffFields } from './diff-fields.ts'
import type { DocumentResource } from './document-resources.ts'
import { resolveReferences } from './references.ts'
import { resourceConfigKinds } from './resource-config-kind.ts'
import { sectionKinds } from './section-kinds.ts'

export interface ApplyRequest {
  resources: DocumentResource[]
  /** `config` or `pkg:<name>`. */
  managedBy: string
  dryRun: boolean
  force: boolean
  /** Also delete the items managed by `managedBy` that `resources` no longer holds (package reinstall/uninstall). */
  prune: boolean
}

export interface ApplyChange {
  action: 'created' | 'updated' | 'deleted' | 'unchanged'
  resourceType: string
  resourceName: string
  fields?: unknown
}

/** The wire shape of POST /api/v1/config/apply. */
export interface ApplyResult {
  success: boolean
  summary: { created: number; updated: number; unchanged: number; deleted: number }
  changes: ApplyChange[]
  errors: { path: string; message: string }[]
  warnings: string[]
  /** When not a success: the error code of the refusal (`config.dangling_reference`, `config.invalid_document`, or the refused write's). */
  code?: string
}

export interface Applier {
  /** By `ConfigKind.kind`. */
  kinds: ReadonlyMap<string, ConfigKind>
  /**
   * One transaction, all or nothing; concurrent applies never interleave (a transaction-level
   * advisory lock); references checked before any write; `inTx` lets the caller write its own
   * rows (a package record) in the same transaction (not called on a dry run).
   */
  apply(p: Principal, req: ApplyRequest, inTx?: (tx: ConfigTx) => Promise<void>): Promise<ApplyResult>
  /** What `list` answers for every kind, as config sections (secrets omitted), for export. */
  current(filter?: { managedBy?: string }): Promise<Record<string, Record<string, unknown>[]>>
}

/** The advisory lock every apply holds for its transaction: a second apply waits for the first to commit. */
const APPLY_LOCK = 7351014

/** A write refused in the middle of an apply: thrown inside the transaction so it rolls back, answered as an error. */
class ItemFailed extends Error {
  readonly errors: ApplyResult['errors']
  readonly code: string
  constructor(errors: ApplyResult['errors'], code: string) {
    super(errors[0]?.message ?? 'apply failed')
    this.errors = errors
    this.code = code
  }
}

const failed = (code: string, errors: ApplyResult['errors'], warnings: string[] = []): ApplyResult => ({
  success: false,
  summary: { created: 0, updated: 0, unchanged: 0, deleted: 0 },
  changes: [],
  errors,
  warnings,
  code,
})

/** `spec.agents[0]` and an issue's `model` (or JSON Pointer `/model`) as one path. */
function joinPath(base: string, sub: string): string {
  const rest = sub.replace(/^\//, '').replace(/\//g, '.')
  return rest === '' ? base : `${base}.${rest}`
}

/** An engine's refusal of one item as errors at the item's path (its field issues below it). */
function itemErrors(r: { path: string; kind: string; key: string }, err: AppError): ApplyResult['errors'] {
  const what = `${r.kind} ${r.key}`
  if (err.issues === undefined || err.issues.length === 0) return [{ path: r.path, message: `${what}: ${err.message}` }]
  return err.issues.map((i) => ({ path: joinPath(r.path, i.path), message: `${what}: ${i.message}` }))
}

interface Step {
  r: DocumentResource
  kind: ConfigKind
  current: ConfigCurrent | undefined
}

/**
 * The apply engine of declarative config and packages: the checked resources of a document (in
 * reference order, src/gitops/references.ts) written through their kinds' `write` in one
 * transaction. The generic resource kinds are adapted here from the engine (resource-config-kind.ts);
 * `configKinds` are the other areas' (the features' `configKinds`), and win over an adapter of
 * the same kind.
 */
export function createApplier(ctx: ServiceContext, configKinds: ConfigKind[]): Applier {
  const kinds = new Map<string, ConfigKind>()
  for (const k of [...resourceConfigKinds(ctx.resources), ...configKinds]) kinds.set(k.kind, k)
  // sections in apply order; deletions run the other way round (what refers goes first)
  const order = Object.values(sectionKinds) as string[]
  const ordered = [...kinds.values()].sort((a, b) => order.indexOf(a.kind) - order.indexOf(b.kind))
  const log = ctx.log.child({ mod: 'config-apply' })

  async function readCurrent(tx: ConfigTx): Promise<Map<string, Map<string, ConfigCurrent>>> {
    const out = new Map<string, Map<string, ConfigCurrent>>()
    for (const k of ordered) out.set(k.kind, new Map((await k.list(tx)).map((c) => [c.key, c])))
    return out
  }

  async function plan(tx: ConfigTx, p: Principal, req: ApplyRequest) {
    const current = await readCurrent(tx)
    const resolved = resolveReferences(req.resources, {
      refs: (kind, body) => (kinds.get(kind)?.refs(body) ?? []).map((r) => ({ kind: r.kind, ref: r.key })),
      exists: (kind, key) => current.get(kind)?.has(key) ?? false,
    })
    if (resolved.dangling.length > 0)
      return {
        code: 'config.dangling_reference',
        errors: resolved.dangling.map(({ path, message }) => ({ path, message })),
      }
    const warnings = resolved.cycles.map((c) => `${c.path}: ${c.message}`)
    const changes: ApplyChange[] = []
    const writes: Step[] = []
    const errors: ApplyResult['errors'] = []
    for (const r of resolved.ordered) {
      const kind = kinds.get(r.kind) as ConfigKind
      const cur = current.get(r.kind)?.get(r.key)
      const change = { resourceType: r.kind, resourceName: r.key }
      if (cur !== undefined && cur.managedBy !== req.managedBy && !req.force) {
        const who = cur.managedBy === null ? 'it was created through the API' : `it is managed by ${cur.managedBy}`
        warnings.push(
          `${r.kind} ${r.key} exists and is not managed by ${req.managedBy} (${who}); left as it is (apply with force to take it over)`,
        )
        changes.push({ ...change, action: 'unchanged' })
        continue
      }
      if (
        cur !== undefined &&
        cur.managedBy === req.managedBy &&
        (kind.checksum(r.body) === cur.checksum || (await kind.unchanged?.(tx, r.body, cur)) === true)
      ) {
        changes.push({ ...change, action: 'unchanged' })
        continue
      }
      // A dry run validates what would be written (nothing else will); a real apply leaves it to
      // the write, which checks the same and rolls the whole apply back on the first refusal —
      // validating twice was a third of a first apply's time. Unchanged items are never validated.
      if (req.dryRun)
        for (const issue of await kind.validate(p, r.body))
          errors.push({ path: joinPath(r.path, issue.path), message: `${r.kind} ${r.key}: ${issue.message}` })
      const fields = diffFields(cur?.body ?? {}, r.body, kind.secretFields)
      changes.push({ ...change, action: cur === undefined ? 'created' : 'updated', fields })
      writes.push({ r, kind, current: cur })
    }
    const removals: { kind: ConfigKind; key: string }[] = []
    if (req.prune) {
      const wanted = new Set(req.resources.map((r) => `${r.kind} ${r.key}`))
      for (const kind of [...ordered].reverse())
        for (const cur of current.get(kind.kind)?.values() ?? [])
          if (cur.managedBy === req.managedBy && !wanted.has(`${kind.kind} ${cur.key}`)) {
            removals.push({ kind, key: cur.key })
            changes.push({ action: 'deleted', resourceType: kind.kind, resourceName: cur.key })
          }
    }
    return { code: 'config.invalid_document', errors, warnings, changes, writes, removals }
  }

  return {
    kinds,
    async apply(p, req, inTx) {
      const unknown = req.resources.filter((r) => !kinds.has(r.kind))
      if (unknown.length > 0)
        return failed(
          'config.invalid_document',
          unknown.map((r) => ({ path: r.path, message: `${r.kind} cannot be applied on this platform` })),
        )
      const after: AfterCommit[] = []
      const started = performance.now()
      let result: ApplyResult
      try {
        result = await transaction(ctx.db, async (tx) => {
          after.length = 0 // a transaction run again (serialization failure) starts over
          await tx.query(sql.unsafe`select pg_advisory_xact_lock(${APPLY_LOCK})`)
          const planned = await plan(tx, p, req)
          if (planned.errors.length > 0 || planned.changes === undefined)
            return failed(planned.code, planned.errors, planned.warnings ?? [])
          const count = (a: ApplyChange['action']) => planned.changes.filter((c) => c.action === a).length
          const answer: ApplyResult = {
            success: true,
            summary: {
              created: count('created'),
              updated: count('updated'),
              unchanged: count('unchanged'),
              deleted: count('deleted'),
            },
            changes: planned.changes,
            errors: [],
            warnings: planned.warnings,
          }
          if (req.dryRun) return answer
          for (const { r, kind, current } of planned.writes) {
            try {
              after.push(
                ...(await kind.write(tx, p, r.body, {
                  managedBy: req.managedBy,
                  ...(current === undefined ? {} : { current }),
                })),
              )
            } catch (err) {
              if (err instanceof AppError) throw new ItemFailed(itemErrors(r, err), err.code)
              throw err
            }
          }
          for (const { kind, key } of planned.removals) after.push(...(await kind.remove(tx, p, key)))
          if (inTx !== undefined) await inTx(tx)
          return answer
        })
      } catch (err) {
        if (err instanceof ItemFailed) return failed(err.code, err.errors)
        throw err
      }
      // announcements and settings for other processes: only now that the writes are visible.
      // Independent of each other, so not one after the other: each announcement waits for its
      // NATS flush, and a thousand in a row were a quarter of a large first apply.
      const committed = performance.now()
      await Promise.all(
        after.map((work) => work().catch((err: unknown) => log.error({ err }, 'work after a config apply failed'))),
      )
      if (!req.dryRun && result.success)
        log.info(
          {
            managedBy: req.managedBy,
            by: p.userId,
            ...result.summary,
            ms: Math.round(committed - started),
            afterCommitMs: Math.round(performance.now() - committed),
          },
          'config applied',
        )
      return result
    },
    async current(filter) {
      const out: Record<string, Record<string, unknown>[]> = {}
      for (const kind of ordered) {
        const items = (await kind.list(ctx.db)).filter(
          (c) => filter?.managedBy === undefined || c.managedBy === filter.managedBy,
        )
        if (items.length > 0) out[kind.section] = items.map((c) => c.body)
      }
      return out
    },
  }
}
