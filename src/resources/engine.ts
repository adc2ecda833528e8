import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import type { TObject } from '@sinclair/typebox'
import type { SecretBox } from '../kernel/crypto.ts'
import type { Logger } from '../kernel/log.ts'
import type { Db } from '../platform/db.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import type { AnyKind } from './kind.ts'
import { natsRowCache, uncachedRows, type RowCache } from './row-cache.ts'
import type { SpecCheck } from './validation.ts'
import type { Tx } from './write-steps.ts'

/** A kind's compiled body checks (compiled once, at start). */
export interface CompiledChecks {
  spec: TypeCheck<TObject>
  create: TypeCheck<TObject>
  update: TypeCheck<TObject>
}

/**
 * What the resource engine's operations share: the database, the secret box, the kinds by name
 * and their compiled checks. Built once by `createResourceService`, passed to every operation.
 */
export interface ResourceEngine {
  db: Db
  log: Logger
  box: SecretBox
  kinds: ReadonlyMap<string, AnyKind>
  checks(kind: AnyKind): CompiledChecks
  /** The features' rules on specs beyond the kinds' own (validation.ts `SpecCheck`). */
  specChecks: readonly SpecCheck[]
  /** The rows reads are answered from (row-cache.ts); writes tell it what they changed. */
  rows: RowCache
  /**
   * Set when the engine writes inside a caller's transaction (a config apply, `within` in
   * service.ts): writes run on it instead of a transaction of their own, and their change
   * announcements wait in `deferred` until the caller committed — another process re-reading a
   * row before the commit would cache the old one. Unset on the API path: announced at once.
   */
  outer?: { tx: Tx; deferred: (() => Promise<void>)[]; admitted: Set<string> }
}

export interface EngineDeps {
  db: Db
  log: Logger
  kinds: readonly AnyKind[]
  box: SecretBox
  /** The features' spec checks (their `specChecks`, collected by the roles). */
  specChecks?: readonly SpecCheck[]
  /** With NATS, reads come from memory kept coherent across processes; without, every read is a query. */
  nats?: { nc: NatsConnection; names: NatsNames }
}

export function resourceEngine(deps: EngineDeps): ResourceEngine {
  const kinds = new Map(deps.kinds.map((k) => [k.kind, k]))
  const compiled = new Map<string, CompiledChecks>(
    deps.kinds.map((k) => [
      k.kind,
      {
        spec: TypeCompiler.Compile(k.spec),
        create: TypeCompiler.Compile(k.createBody),
        update: TypeCompiler.Compile(k.updateBody),
      },
    ]),
  )
  const rows =
    deps.nats === undefined
      ? uncachedRows(deps.db)
      : natsRowCache({ db: deps.db, nc: deps.nats.nc, names: deps.nats.names, kinds, log: deps.log })
  return {
    db: deps.db,
    log: deps.log,
    box: deps.box,
    kinds,
    checks: (kind) => compiled.get(kind.kind) as CompiledChecks,
    specChecks: deps.specChecks ?? [],
    rows,
  }
}
