import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import type { TObject } from '@sinclair/typebox'
import type { SecretBox } from '../kernel/crypto.ts'
import type { Logger } from '../kernel/log.ts'
import type { Db } from '../platform/db.ts'
import type { AnyKind } from './kind.ts'

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
}

export function resourceEngine(deps: { db: Db; log: Logger; kinds: readonly AnyKind[]; box: SecretBox }): ResourceEngine {
  const kinds = new Map(deps.kinds.map((k) => [k.kind, k]))
  const compiled = new Map<string, CompiledChecks>(
    deps.kinds.map((k) => [k.kind, { spec: TypeCompiler.Compile(k.spec), create: TypeCompiler.Compile(k.createBody), update: TypeCompiler.Compile(k.updateBody) }]),
  )
  return { db: deps.db, log: deps.log, box: deps.box, kinds, checks: (kind) => compiled.get(kind.kind) as CompiledChecks }
}
