import type { Piece } from '../data/placeholders.ts'
import type { Statement } from '../data/drivers/types.ts'

/*
 * The statements a database trigger runs on the polled Postgres database. Nothing the user typed
 * is written into the SQL as is:
 *  - schema, table and column names are first looked up in information_schema as bound values
 *    (`columnStatement`), then written as quoted identifiers (`"…"`, `"` doubled): a name that
 *    exists is the only thing that can be quoted, and quoting keeps it one identifier;
 *  - the bookmark is a bound value cast to the column's type, and that type is a word from the fixed
 *    map below (chosen by the detected udt_name), never the catalog's text.
 */

/** Poll-column types a bookmark can be kept for (udt_name → the type the bookmark is cast to). */
export const BOOKMARK_TYPES: Readonly<Record<string, string>> = {
  int2: 'smallint',
  int4: 'integer',
  int8: 'bigint',
  numeric: 'numeric',
  float4: 'real',
  float8: 'double precision',
  date: 'date',
  timestamp: 'timestamp',
  timestamptz: 'timestamptz',
}

/** Postgres identifier quoting (the `quote_ident` rule, always quoted). */
export const quoteIdent = (name: string): string => `"${name.replaceAll('"', '""')}"`

/** Extra columns a read adds to every row (taken off before the rows reach the function). */
export const BOOKMARK_COL = '__platform_bookmark'
export const SETTLED_COL = '__platform_settled'
export const TIE_COL = '__platform_tie'
/** With a created column: whether the row's created value equals its poll value (it was inserted, not updated). */
export const INSERTED_COL = '__platform_inserted'

export interface Target {
  schema: string
  table: string
  column: string
  /** The created column (src/db-triggers/operations.ts), when the trigger names one. */
  created?: string | null
}

const statement = (
  pieces: Piece[],
  params: Record<string, unknown>,
  timeoutMs: number,
  maxRows: number,
): Statement => ({ pieces, params, readOnly: true, timeoutMs, maxRows })

/**
 * The column's type, whether the relation is a table, and whether the column is filled by a
 * sequence (an identity, or a `nextval(…)` default: serial, bigserial) (information_schema; every
 * name bound).
 */
export function columnStatement(t: Target, timeoutMs: number): Statement {
  return statement(
    [
      {
        text: "select c.udt_name, tb.table_type, (c.is_identity = 'YES' or coalesce(c.column_default, '') like 'nextval(%') as sequenced from information_schema.columns c join information_schema.tables tb on tb.table_schema = c.table_schema and tb.table_name = c.table_name where c.table_schema = ",
      },
      { param: 'schema' },
      { text: ' and c.table_name = ' },
      { param: 'table' },
      { text: ' and c.column_name = ' },
      { param: 'column' },
    ],
    { schema: t.schema, table: t.table, column: t.column },
    timeoutMs,
    1,
  )
}

const relation = (t: Target): string => `${quoteIdent(t.schema)}.${quoteIdent(t.table)}`

/*
 * Lock modes a session writing the table holds: INSERT, UPDATE, DELETE and COPY take
 * RowExclusiveLock when the statement is parsed, before any default (a `nextval()`, a `now()`) is
 * evaluated and before the transaction has an xid; the stronger modes are LOCK TABLE's and DDL's.
 */
const WRITE_LOCKS = `'RowExclusiveLock', 'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock'`

/**
 * The writer wait of a poll (see poll.ts, `settledRead`), as one statement: `v`, the poll value of
 * the `limit`-th row after the bookmark as text (of the last one when there are fewer; null when
 * there is none), and `writers`, the virtual transaction ids of the other sessions holding a write
 * lock on the table or one of its partitions (inheritance children), read from pg_locks during
 * execution, i.e. after the statement's snapshot.
 */
export function reachStatement(
  t: Target,
  cast: string,
  o: { after: string | null; limit: number; timeoutMs: number },
): Statement {
  const col = `t.${quoteIdent(t.column)}`
  const pieces: Piece[] = [
    {
      text: `select (select max(s.v)::text from (select ${col} as v from ${relation(t)} as t where ${col} is not null`,
    },
  ]
  const params: Record<string, unknown> = { rel: relation(t) }
  if (o.after !== null) {
    pieces.push({ text: ` and ${col} > cast(` }, { param: 'after' }, { text: ` as ${cast})` })
    params['after'] = o.after
  }
  pieces.push(
    { text: ` order by ${col} limit ${String(Math.max(1, Math.floor(o.limit)))}) as s) as v, ` },
    // the table and its partitions (or inheritance children), at every level: a writer may insert into one directly
    { text: '(with recursive tree(oid) as (select cast(cast(' },
    { param: 'rel' },
    {
      text: ' as text) as regclass)::oid union select i.inhrelid from pg_inherits as i join tree on i.inhparent = tree.oid) ',
    },
    {
      text: `select coalesce(json_agg(distinct l.virtualtransaction), '[]'::json)::text from pg_locks as l where l.locktype = 'relation' and l.database = (select d.oid from pg_database as d where d.datname = current_database()) and l.granted and l.mode in (${WRITE_LOCKS}) and l.pid is distinct from pg_backend_pid() and l.relation in (select tree.oid from tree)) as writers`,
    },
  )
  return statement(pieces, params, o.timeoutMs, 1)
}

/** How many of `writers` (virtual transaction ids from `reachStatement`) are still running. */
export function writersStatement(writers: readonly string[], timeoutMs: number): Statement {
  return statement(
    [
      {
        text: 'select count(distinct l.virtualtransaction)::int as n from pg_locks as l where l.virtualtransaction in (select jsonb_array_elements_text(cast(',
      },
      { param: 'vx' },
      { text: ' as jsonb)))' },
    ],
    { vx: JSON.stringify(writers) },
    timeoutMs,
    1,
  )
}

/** The first bookmark: MAX(poll_column) as text (null for an empty table). */
export function maxStatement(t: Target, timeoutMs: number): Statement {
  return statement(
    [{ text: `select max(t.${quoteIdent(t.column)})::text as v from ${relation(t)} as t` }],
    {},
    timeoutMs,
    1,
  )
}

/**
 * Rows after the bookmark (`after`; none: from the start), up to `upTo` when given (a pending batch
 * read again), in poll-column order, `limit` at most. Each row gets its bookmark as text, whether
 * its value equals the previous row's (ties must not be split between batches), and, with
 * `horizon`, whether the transaction that wrote it precedes the oldest transaction still open:
 * a row written after an open transaction began could be overtaken by a lower value that
 * transaction commits later, so the batch stops before it. The xid comparison is modulo 2^32
 * (wraparound-safe; xids 0–2 are the special, always-committed ones).
 */
export function rowsStatement(
  t: Target,
  cast: string,
  o: { after: string | null; upTo: string | null; limit: number; horizon: boolean; timeoutMs: number },
): Statement {
  const col = `t.${quoteIdent(t.column)}`
  const settled = o.horizon
    ? `(t.xmin::text::bigint < 3 or ((select txid_snapshot_xmin(txid_current_snapshot())) % 4294967296 - t.xmin::text::bigint + 4294967296) % 4294967296 between 1 and 2147483647)`
    : 'true'
  // the created column exists (checked like the poll column) and is compared as it is stored: equal values → an INSERT
  const inserted =
    t.created === undefined || t.created === null
      ? ''
      : `, (t.${quoteIdent(t.created)} is not distinct from ${col}) as ${quoteIdent(INSERTED_COL)}`
  const pieces: Piece[] = [
    {
      text: `select t.*, ${col}::text as ${quoteIdent(BOOKMARK_COL)}, ${settled} as ${quoteIdent(SETTLED_COL)}, coalesce(${col} = lag(${col}) over (order by ${col}), false) as ${quoteIdent(TIE_COL)}${inserted} from ${relation(t)} as t where ${col} is not null`,
    },
  ]
  const params: Record<string, unknown> = {}
  if (o.after !== null) {
    pieces.push({ text: ` and ${col} > cast(` }, { param: 'after' }, { text: ` as ${cast})` })
    params['after'] = o.after
  }
  if (o.upTo !== null) {
    pieces.push({ text: ` and ${col} <= cast(` }, { param: 'upto' }, { text: ` as ${cast})` })
    params['upto'] = o.upTo
  }
  pieces.push({ text: ` order by ${col} limit ${String(Math.max(1, Math.floor(o.limit)))}` })
  return statement(pieces, params, o.timeoutMs, o.limit)
}
