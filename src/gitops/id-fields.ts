import { Type as T } from '@sinclair/typebox'
import type { ConfigTx } from '../feature/config-kinds.ts'
import { invalid } from '../kernel/errors.ts'
import { sql, type Db } from '../platform/db.ts'
import { anyRows, rowType } from '../platform/typed-rows.ts'

/**
 * Spec fields that hold another resource's id (what the API takes), named by the resource's name
 * in a document instead, so that a config is portable between installations: a query's
 * `database_connection_id` is `database_connection: <name>` in a document, an agent's
 * `llm_provider_id` is `llm_provider: <name>`. A document may still give the id field itself.
 */
export interface IdField {
  /** The spec field holding the id. */
  field: string
  /** The named kind it points at. */
  kind: string
  /** The document's field holding the name instead. */
  as: string
}

export const ID_FIELDS: Readonly<Record<string, readonly IdField[]>> = {
  agent: [{ field: 'llm_provider_id', kind: 'llm_provider', as: 'llm_provider' }],
  query: [{ field: 'database_connection_id', kind: 'database_connection', as: 'database_connection' }],
}

/** Stands for a name not on the platform yet (created by the same apply): checks pass, checksums differ. */
const NOT_YET = '00000000-0000-4000-8000-000000000000'

const IdName = rowType(T.Object({ id: T.String(), name: T.String() }, { title: 'resource id and name' }))

/** Names and ids of the named kinds id fields point at, as last read (`load`) for the synchronous steps. */
export interface IdDirectory {
  load(tx: ConfigTx | Db, kinds: readonly string[]): Promise<void>
  idOf(kind: string, name: string): string | undefined
  nameOf(kind: string, id: string): string | undefined
}

export function idDirectory(): IdDirectory {
  const ids = new Map<string, Map<string, string>>()
  const names = new Map<string, Map<string, string>>()
  return {
    async load(tx, kinds) {
      for (const kind of kinds) {
        const rows = await anyRows(
          tx,
          IdName,
          sql.unsafe`select id::text as id, name from resources where kind = ${kind}`,
        )
        ids.set(kind, new Map(rows.map((r) => [r.name, r.id])))
        names.set(kind, new Map(rows.map((r) => [r.id, r.name])))
      }
    },
    idOf: (kind, name) => ids.get(kind)?.get(name),
    nameOf: (kind, id) => names.get(kind)?.get(id),
  }
}

/** The body with each named reference turned into its id field (`resolve` answers the id; none: a placeholder). */
export function withIds(
  fields: readonly IdField[],
  body: Record<string, unknown>,
  resolve: (kind: string, name: string) => string | undefined,
): Record<string, unknown> {
  if (!fields.some((f) => f.as in body)) return body
  const out = { ...body }
  for (const f of fields) {
    if (!(f.as in out)) continue
    const name = out[f.as]
    delete out[f.as]
    out[f.field] = typeof name === 'string' ? (resolve(f.kind, name) ?? NOT_YET) : null
  }
  return out
}

/** `withIds` for a write: every name must be on the platform as the transaction sees it. */
export async function withIdsInTx(
  tx: ConfigTx,
  fields: readonly IdField[],
  body: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const named = fields.filter((f) => typeof body[f.as] === 'string')
  if (named.length === 0) return withIds(fields, body, () => undefined)
  const dir = idDirectory()
  await dir.load(
    tx,
    named.map((f) => f.kind),
  )
  const missing = named.filter((f) => dir.idOf(f.kind, body[f.as] as string) === undefined)
  if (missing.length > 0)
    throw invalid(
      `no ${missing.map((f) => `${f.kind} named ${String(body[f.as])}`).join(', ')}`,
      missing.map((f) => ({ path: f.as, message: `no ${f.kind} named ${String(body[f.as])}` })),
    )
  return withIds(fields, body, (kind, name) => dir.idOf(kind, name))
}
