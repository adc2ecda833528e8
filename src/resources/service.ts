import type { Static, TObject } from '@sinclair/typebox'
import type { Principal } from '../auth/principal.ts'
import { applyResource } from './apply.ts'
import { createResource } from './create.ts'
import type { Db } from '../platform/db.ts'
import { resourceEngine, type EngineDeps, type ResourceEngine } from './engine.ts'
import type { AnyKind, Kind } from './kind.ts'
import {
  allResources,
  expandResources,
  getResource,
  listResources,
  loadManyResources,
  resourceById,
  resourceVersions,
  secretsOfResource,
} from './reads.ts'
import { findRow } from './find-row.ts'
import { openSecrets } from './secrets.ts'
import { removeResource, updateResource } from './update.ts'
import type { Tx } from './write-steps.ts'

/*
 * The generic resource engine over the one `resources` table. Every kind is handled by the same
 * code; what differs comes from its description. Permissions are checked here, at execution time,
 * whoever calls (HTTP route, config apply, package install). The operations live in files of their
 * own (create.ts, update.ts, apply.ts, reads.ts) over one `ResourceEngine` (engine.ts).
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
  /**
   * The actions any one of which makes a resource count (default `['read']`). Agent tools over
   * functions and queries pass `['read', 'execute']`: `execute` alone is enough to run one.
   */
  actions?: readonly string[]
}

export interface WriteOptions {
  /** `config`, `pkg:<name>`; API writes pass null, which detaches a managed resource (detach-on-edit). */
  managedBy?: string | null
}

export type ApplyAction = 'created' | 'updated' | 'unchanged'

/** A write the engine made (API, config apply, package install): what `onChange` listeners hear. */
export interface ResourceChange {
  kind: string
  id: string
  action: 'created' | 'updated' | 'deleted'
}

export interface ResourceService {
  kinds: ReadonlyMap<string, AnyKind>
  list<S extends TObject>(
    p: Principal,
    kind: Kind<S>,
    options?: ListOptions,
  ): Promise<{ items: ResourceRecord<Static<S>>[]; total: number }>
  get<S extends TObject>(p: Principal, kind: Kind<S>, address: Address): Promise<ResourceRecord<Static<S>>>
  create<S extends TObject>(
    p: Principal,
    kind: Kind<S>,
    body: Record<string, unknown>,
    options?: WriteOptions,
  ): Promise<ResourceRecord<Static<S>>>
  update<S extends TObject>(
    p: Principal,
    kind: Kind<S>,
    address: Address,
    patch: Record<string, unknown>,
    options?: WriteOptions,
  ): Promise<ResourceRecord<Static<S>>>
  /** For the platform's own use (no permission check): one resource by id, inactive ones included; null when absent. */
  byId<S extends TObject>(kind: Kind<S>, id: string): Promise<ResourceRecord<Static<S>> | null>
  /** For the platform's own use (no permission check): every resource of the kind, inactive ones included, by namespace and name (from memory when warm). */
  all<S extends TObject>(kind: Kind<S>): Promise<ResourceRecord<Static<S>>[]>
  /** For the platform's own use (no permission check): the resources named `namespace/name`, inactive ones included, in `refs` order. */
  loadMany<S extends TObject>(kind: Kind<S>, refs: readonly string[]): Promise<ResourceRecord<Static<S>>[]>
  remove(p: Principal, kind: AnyKind, address: Address): Promise<void>
  versions(
    p: Principal,
    kind: AnyKind,
    address: Address,
  ): Promise<{ version: number; fields: unknown; created_by: string | null; created_at: string }[]>
  /** Create or update to match `body`, skipping unchanged resources by checksum; refuses resources managed by someone else unless forced. */
  apply(
    p: Principal,
    kind: AnyKind,
    body: Record<string, unknown>,
    options: { managedBy: string; force?: boolean; dryRun?: boolean },
  ): Promise<{ action: ApplyAction; record?: ResourceRecord; warning?: string }>
  /** Wildcard expansion: active resources the principal may read (or act on: `options.actions`) that match `ns/name`, `ns/*` or `*\/*`. */
  expand(
    p: Principal,
    kind: AnyKind,
    patterns: readonly string[],
    options?: ExpandOptions,
  ): Promise<{ namespace: string; name: string }[]>
  /** The decrypted secret fields of a resource (for the platform's own use, never for responses). */
  secretsOf(kind: AnyKind, id: string): Promise<Record<string, string>>
  /** Stops following other processes' changes (the row cache's subscription). */
  close(): void
  /**
   * Hears every successful write of this process's engine, after it committed (e.g. database
   * connections announce a change so every process drops its pool). A listener must not throw;
   * one that does is logged and ignored. Returns the unsubscribe function.
   */
  onChange(listener: (change: ResourceChange) => void): () => void
  /**
   * A hook run before this engine deletes a resource of `kind` (after the permission check), with
   * the record: for state of the kind kept outside the resources table that must be ended first
   * (connectors revoke their OAuth tokens). One hook per kind; one that throws stops the delete.
   */
  beforeRemove(kind: AnyKind, hook: (record: ResourceRecord) => Promise<void>): void
  /**
   * The engine's writes inside the caller's transaction (a config apply, a package install): the
   * same checks, permissions and rows as `create` / `update` / `remove`, on `tx`; what they would
   * announce to the caches of every process (and to `onChange` listeners) waits in the writer
   * (`takeAfterCommit`), for the caller to run once `tx` committed — never when it rolled back.
   */
  within(tx: Tx): ResourceWriter
}

/*
 * The namespaces admitted so far in an outer transaction, by its connection handle (slonik binds a
 * new handle for every connection checkout, so an entry never outlives its transaction's use of it).
 */
const admittedByTx = new WeakMap<Tx, Set<string>>()
function admittedIn(tx: Tx): Set<string> {
  let set = admittedByTx.get(tx)
  if (set === undefined) admittedByTx.set(tx, (set = new Set<string>()))
  return set
}

/** The resource engine writing inside one outer transaction (`ResourceService.within`). */
export interface ResourceWriter {
  create(p: Principal, kind: AnyKind, body: Record<string, unknown>, options?: WriteOptions): Promise<ResourceRecord>
  update(
    p: Principal,
    kind: AnyKind,
    address: Address,
    patch: Record<string, unknown>,
    options?: WriteOptions,
  ): Promise<ResourceRecord>
  remove(p: Principal, kind: AnyKind, address: Address): Promise<void>
  /** The stored secret fields of the resource in clear, as the transaction sees it; null when absent (for comparing, never for responses). */
  secretsAt(kind: AnyKind, address: Address): Promise<Record<string, string> | null>
  /** The secret fields of a row already read (`row.secrets` as stored), in clear: no query. */
  openSecrets(kind: AnyKind, row: { id: string; secrets: Record<string, string> }): Record<string, string>
  /** Takes the announcements the writes so far left for after the commit (each taken once). */
  takeAfterCommit(): (() => Promise<void>)[]
}

export function createResourceService(deps: EngineDeps): ResourceService {
  const e = resourceEngine(deps)
  const listeners = new Set<(change: ResourceChange) => void>()
  const removeHooks = new Map<string, (record: ResourceRecord) => Promise<void>>()
  const emit = (change: ResourceChange) => {
    for (const l of listeners) {
      try {
        l(change)
      } catch (err) {
        deps.log.error({ err, change }, 'a resource change listener failed')
      }
    }
  }
  const created =
    <R extends { id: string }>(kind: AnyKind, action: ResourceChange['action']) =>
    (r: R) => {
      emit({ kind: kind.kind, id: r.id, action })
      return r
    }
  // The engine works on any kind; the typed signatures of ResourceService only narrow what it returns.
  return {
    kinds: e.kinds,
    list: ((p: Principal, kind: AnyKind, options?: ListOptions) =>
      listResources(e, p, kind, options)) as ResourceService['list'],
    get: ((p: Principal, kind: AnyKind, address: Address) =>
      getResource(e, p, kind, address)) as ResourceService['get'],
    create: ((p: Principal, kind: AnyKind, body: Record<string, unknown>, options?: WriteOptions) =>
      createResource(e, p, kind, body, options).then(created(kind, 'created'))) as ResourceService['create'],
    update: ((p: Principal, kind: AnyKind, address: Address, patch: Record<string, unknown>, options?: WriteOptions) =>
      updateResource(e, p, kind, address, patch, options).then(created(kind, 'updated'))) as ResourceService['update'],
    byId: ((kind: AnyKind, id: string) => resourceById(e, kind, id)) as ResourceService['byId'],
    loadMany: ((kind: AnyKind, refs: readonly string[]) =>
      loadManyResources(e, kind, refs)) as ResourceService['loadMany'],
    all: ((kind: AnyKind) => allResources(e, kind)) as ResourceService['all'],
    remove: async (p, kind, address) => {
      const id = await removeResource(e, p, kind, address, removeHooks.get(kind.kind))
      emit({ kind: kind.kind, id, action: 'deleted' })
    },
    versions: (p, kind, address) => resourceVersions(e, p, kind, address),
    apply: async (p, kind, body, options) => {
      const out = await applyResource(e, p, kind, body, options)
      if (out.action !== 'unchanged' && options.dryRun !== true && out.record !== undefined)
        emit({ kind: kind.kind, id: out.record.id, action: out.action })
      return out
    },
    expand: (p, kind, patterns, options) => expandResources(e, p, kind, patterns, options),
    secretsOf: (kind, id) => secretsOfResource(e, kind, id),
    close: () => e.rows.close(),
    onChange(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    beforeRemove(kind, hook) {
      removeHooks.set(kind.kind, hook)
    },
    within(tx) {
      const deferred: (() => Promise<void>)[] = []
      const inner: ResourceEngine = {
        ...e,
        db: tx as unknown as Db,
        outer: { tx, deferred, admitted: admittedIn(tx) },
      }
      // listeners hear a write only once it committed, like the caches
      const later = (kind: AnyKind, id: string, action: ResourceChange['action']) =>
        deferred.push(async () => emit({ kind: kind.kind, id, action }))
      return {
        create: async (p, kind, body, options) => {
          const r = await createResource(inner, p, kind, body, options)
          later(kind, r.id, 'created')
          return r
        },
        update: async (p, kind, address, patch, options) => {
          const r = await updateResource(inner, p, kind, address, patch, options)
          later(kind, r.id, 'updated')
          return r
        },
        remove: async (p, kind, address) => {
          later(kind, await removeResource(inner, p, kind, address, removeHooks.get(kind.kind)), 'deleted')
        },
        secretsAt: async (kind, address) => {
          const row = await findRow(inner.db, kind, address)
          return row === null ? null : openSecrets(e.box, kind, row)
        },
        openSecrets: (kind, row) => openSecrets(e.box, kind, row),
        takeAfterCommit: () => deferred.splice(0),
      }
    },
  }
}
