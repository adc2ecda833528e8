import type { Principal } from '../auth/principal.ts'
import { notFound } from '../kernel/errors.ts'
import { sql, type Db } from '../platform/db.ts'
import { maybeRow } from '../platform/typed-rows.ts'
import type { AnyKind } from './kind.ts'
import { canOnResource } from './permissions.ts'
import { ROW_COLUMNS, ResourceRow, rowMeta, type Row } from './row.ts'
import type { Address } from './service.ts'

function whereAddress(kind: AnyKind, address: Address) {
  if ('id' in address) {
    if (!/^[0-9a-f-]{36}$/i.test(address.id)) return null
    return sql.unsafe`kind = ${kind.kind} and id = ${address.id}::uuid`
  }
  const ns = 'namespace' in address ? address.namespace : ''
  return sql.unsafe`kind = ${kind.kind} and namespace = ${ns} and name = ${address.name}`
}

/** `agent 0b5…`, `agent demo/helper`, `llm_provider openai-main`: how messages name an address. */
export const describeAddress = (kind: AnyKind, address: Address): string =>
  'id' in address
    ? `${kind.kind} ${address.id}`
    : 'namespace' in address
      ? `${kind.kind} ${address.namespace}/${address.name}`
      : `${kind.kind} ${address.name}`

/** The row at `address` (no permission check); null when absent or the id is malformed. */
export async function findRow(db: Db, kind: AnyKind, address: Address): Promise<Row | null> {
  const where = whereAddress(kind, address)
  if (where === null) return null
  return maybeRow(db, ResourceRow, sql.unsafe`select ${ROW_COLUMNS} from resources where ${where}`)
}

/** A resource the principal may not read answers 404, like one that does not exist. */
export async function visibleRow(db: Db, p: Principal, kind: AnyKind, address: Address): Promise<Row> {
  const row = await findRow(db, kind, address)
  if (row === null || !canOnResource(p, kind, 'read', rowMeta(row)))
    throw notFound(`${describeAddress(kind, address)} not found`)
  return row
}
