import type { DbTriggerInput } from '../../schemas/db-triggers.ts'
import type { ConnectionPools, ConnectionRecord } from '../data/pools.ts'
import type { DataPool } from '../data/drivers/types.ts'
import { AppError } from '../kernel/errors.ts'
import type { Logger } from '../kernel/log.ts'
import type { Batch } from './batch.ts'
import { columnStatement, type Target } from './target-sql.ts'

/*
 * INSERT or UPDATE: what a poll can tell. A poll sees rows whose poll column moved past the
 * bookmark; whether a row got there by an INSERT or an UPDATE depends on the table:
 *  - a created column (`created_column`, e.g. created_at beside an updated_at poll column, both
 *    `default now()`): an INSERT gives both the same value, a later UPDATE moves only the poll
 *    column, so equal values = INSERT, different = UPDATE, per row ('per-row');
 *  - a poll column filled by a sequence (identity, serial): it grows on INSERT only, so every row
 *    seen was inserted and updates are never seen ('insert-only');
 *  - anything else (a timestamp column without a created column): a row may be either; the poll
 *    delivers CHANGE, which only a trigger asking for both operations accepts ('change').
 * A trigger asking for one operation where the table cannot tell them apart is refused (422
 * `db_trigger.operations_undetectable`) at save when the table can be inspected then, and at every
 * poll (recorded as the trigger's error), since a table can change under a saved trigger.
 */
export type Operation = 'INSERT' | 'UPDATE'
export type OperationPlan = 'per-row' | 'insert-only' | 'change'

/** What the table tells about the poll column (null: not inspectable now — no such column, or the database unreachable). */
export interface TableFacts {
  sequenced: boolean
}

const undetectable = (detail: string) => AppError.of('db_trigger.operations_undetectable', detail)

/** How the trigger's rows get their operation; throws 422 when its operations cannot be told apart on this table. */
export function operationPlan(operations: readonly string[], created: string | null, facts: TableFacts): OperationPlan {
  if (created !== null) return 'per-row'
  if (facts.sequenced) {
    if (!operations.includes('INSERT'))
      throw undetectable(
        'a poll column filled by a sequence grows on INSERT only: an UPDATE-only trigger never sees a row (name a created_column and poll an updated_at-like column)',
      )
    return 'insert-only'
  }
  if (operations.includes('INSERT') && operations.includes('UPDATE')) return 'change'
  throw undetectable(
    `this table cannot tell ${operations.join(' from ')} from the other operation by its poll column: ask for both (delivered as CHANGE), poll a sequence/identity column (INSERT), or name a created_column set at INSERT to the poll column's value`,
  )
}

/** The operations of a trigger saved without them: what its table can tell. */
export const defaultOperations = (created: string | null, facts: TableFacts | null): Operation[] =>
  created === null && facts?.sequenced === true ? ['INSERT'] : ['INSERT', 'UPDATE']

/** The batch's rows the trigger delivers (its operations only) and the input's operation fields. */
export function deliverable(
  plan: OperationPlan,
  operations: readonly string[],
  batch: Pick<Batch, 'rows' | 'inserted'>,
): Pick<DbTriggerInput, 'rows' | 'operation' | 'row_operations'> {
  if (plan === 'insert-only') return { rows: batch.rows, operation: 'INSERT' }
  if (plan === 'change') return { rows: batch.rows, operation: 'CHANGE' }
  const rows: Record<string, unknown>[] = []
  const ops: Operation[] = []
  batch.rows.forEach((row, i) => {
    const op: Operation = batch.inserted[i] === true ? 'INSERT' : 'UPDATE'
    if (!operations.includes(op)) return
    rows.push(row)
    ops.push(op)
  })
  const operation = ops.length > 0 && ops.every((o) => o === ops[0]) ? (ops[0] as Operation) : 'CHANGE'
  return { rows, operation, row_operations: ops }
}

/**
 * The poll column's facts, after checking the created column exists (422
 * `db_trigger.column_not_found`). Throws `db_trigger.column_not_found` for a missing poll column too.
 */
export async function tableFacts(
  pool: DataPool,
  t: Target,
  timeoutMs: number,
): Promise<TableFacts & { udt: string; tableType: string }> {
  const found = (await pool.run(columnStatement(t, timeoutMs))).rows[0]
  if (found === undefined)
    throw AppError.of(
      'db_trigger.column_not_found',
      `no column ${t.column} in ${t.schema}.${t.table} (or no privilege to see it)`,
    )
  if (t.created !== undefined && t.created !== null) {
    const created = (await pool.run(columnStatement({ ...t, column: t.created }, timeoutMs))).rows[0]
    if (created === undefined)
      throw AppError.of(
        'db_trigger.column_not_found',
        `no created_column ${t.created} in ${t.schema}.${t.table} (or no privilege to see it)`,
      )
  }
  return {
    sequenced: found['sequenced'] === true,
    udt: String(found['udt_name']),
    tableType: String(found['table_type']),
  }
}

/**
 * At save: the table's facts if it can be inspected now. A missing created column is refused (422);
 * an unreachable database or a missing poll column is left to the polls, which record it.
 */
export async function inspectAtSave(
  pools: ConnectionPools,
  connection: ConnectionRecord,
  t: Target,
  timeoutMs: number,
  log: Logger,
): Promise<TableFacts | null> {
  try {
    return await pools.withConnection(connection.id, (pool) => tableFacts(pool, t, timeoutMs), connection)
  } catch (err) {
    if (
      err instanceof AppError &&
      err.code === 'db_trigger.column_not_found' &&
      err.message.startsWith('no created_column')
    )
      throw err
    log.info(
      { err, connection: connection.id, table: `${t.schema}.${t.table}` },
      'database trigger saved without inspecting its table (the polls check it)',
    )
    return null
  }
}
