import type { Principal } from '../auth/principal.ts'
import type { FieldIssue } from '../kernel/errors.ts'
import type { Db } from '../platform/db.ts'

/*
 * What declarative config and packages need of every kind they carry (docs/gitops.md): one
 * description per kind, so validate, apply, export and package create/install/uninstall go
 * through the same path for every section — the generic resource kinds (an adapter over
 * `defineKind` descriptions, built by the config feature from the engine's kinds) and the areas
 * with tables of their own (webhooks, schedules, database triggers, roles, users, dependencies),
 * which their features contribute as `configKinds` of their Feature object.
 *
 * Bodies are the API's field names (snake_case), as a config document holds them under its
 * section. References to other resources are by name, never by id, so a file is portable between
 * installations: a kind whose table stores an id translates it on `list` and back on `write`.
 */

/** The transaction connection of one apply: every write of the apply runs in it. */
export type ConfigTx = Parameters<Parameters<Db['transaction']>[0]>[0]

/** What one kind holds now, for export and for the plan. */
export interface ConfigCurrent {
  /** The kind's own key of the item (`namespace/name`, `name`, a webhook's `path`, a user's email). */
  key: string
  /** The body as a config document would hold it; secret fields left out. */
  body: Record<string, unknown>
  /** `config`, `pkg:<name>`, or null for an item made through the API (by hand). */
  managedBy: string | null
  /** Compared with `checksum(body)` of the desired item: equal means unchanged (skipped). */
  checksum: string
}

export interface ConfigWriteOptions {
  managedBy: string
  /** The item as it is now, when it exists (the kind updates it in place). */
  current?: ConfigCurrent
}

/**
 * Work a kind must do only once the apply's transaction committed (announce a change to caches,
 * tell an actor its new settings). Collected during the apply and run after the commit, never
 * when it rolls back.
 */
export type AfterCommit = () => Promise<void>

export interface ConfigKind {
  /** Singular identifier (`agent`, `webhook`, `database_trigger`), as in plans and errors. */
  kind: string
  /** The document section that holds it (`agents`, `webhooks`, `databaseTriggers`). */
  section: string
  /** False for what only an administrator's config may carry (roles, users, LLM providers, database connections). */
  packageable: boolean
  /** Fields whose values are never exported nor shown in a plan (only their names). */
  secretFields: readonly string[]
  /** The item's key from its body (what `list` answers as `key`). */
  keyOf(body: Record<string, unknown>): string
  /** The other items it refers to, as `{kind, key}` in the referred kind's key form. */
  refs(body: Record<string, unknown>): { kind: string; key: string }[]
  /** The body as the kind would store it (defaults filled) hashed: what `ConfigCurrent.checksum` is compared with. */
  checksum(body: Record<string, unknown>): string
  /**
   * Optional, for a kind with secret fields: whether the item already matches a body that gives
   * secret values, which `checksum` cannot compare with what is stored (only `list`'s checksum of
   * the public fields is kept). Asked only when the checksums differ.
   */
  unchanged?(tx: ConfigTx, body: Record<string, unknown>, current: ConfigCurrent): Promise<boolean>
  /** Every problem of the body that can be found without writing (schema, the kind's and features' checks). */
  validate(p: Principal, body: Record<string, unknown>): Promise<FieldIssue[]>
  /** Everything of the kind, for export and the plan. */
  list(tx: ConfigTx | Db): Promise<ConfigCurrent[]>
  /** Creates or updates the item inside the apply's transaction; answers work to run after the commit. */
  write(tx: ConfigTx, p: Principal, body: Record<string, unknown>, options: ConfigWriteOptions): Promise<AfterCommit[]>
  /** Deletes the item inside the apply's transaction (a package's uninstall, a pruned item). */
  remove(tx: ConfigTx, p: Principal, key: string): Promise<AfterCommit[]>
}
