import { BOOKMARK_COL, INSERTED_COL, SETTLED_COL, TIE_COL } from './target-sql.ts'

/*
 * Cutting one batch out of the rows a poll read (at most batch_size + 1 of them, in poll-column
 * order), as pure functions. The batch ends at a bookmark that no row left behind can share:
 *  1. it stops before the first row not yet settled (written after the oldest open transaction
 *     began; see target-sql.ts), so a lower value committed late is not skipped (for tables the
 *     rows come from `settledRead` in poll.ts, read once the table's writers have ended);
 *  2. it holds at most batch_size rows, and at most DB_TRIGGER_MAX_BATCH_BYTES of row JSON;
 *  3. it never splits rows of one poll value: the bookmark moves past a value only with all its
 *     rows, so a cut falling inside a run of equal values moves back to before the run. A run of
 *     more than batch_size rows cannot be delivered whole: it is delivered cut (the rest of that
 *     value is skipped) and `splitTie` says so (logged; use a unique column).
 */
export interface ReadRow {
  /** The poll column's value as text: the bookmark after this row. */
  bookmark: string
  settled: boolean
  /** Equal to the previous row's value. */
  tie: boolean
  /** With a created column: the row was inserted (its created value equals its poll value); null without one. */
  inserted: boolean | null
  row: Record<string, unknown>
}

export interface Batch {
  rows: Record<string, unknown>[]
  /** `inserted` of each row (see ReadRow), in the order of `rows`. */
  inserted: (boolean | null)[]
  /** The bookmark after the batch (the last row's); null when the batch is empty. */
  until: string | null
  /** Rows were read beyond the batch (poll again at once). */
  more: boolean
  /** Rows were read but none could be delivered yet (they wait behind an open transaction). */
  held: boolean
  splitTie: boolean
}

export class RowTooLargeError extends Error {
  override name = 'RowTooLargeError'
}

/** A driver row split into the user's columns and the poll's own. */
export function readRow(r: Record<string, unknown>): ReadRow {
  const { [BOOKMARK_COL]: bookmark, [SETTLED_COL]: settled, [TIE_COL]: tie, [INSERTED_COL]: inserted, ...row } = r
  return {
    bookmark: String(bookmark),
    settled: settled === true,
    tie: tie === true,
    inserted: typeof inserted === 'boolean' ? inserted : null,
    row,
  }
}

export function cutBatch(read: readonly ReadRow[], batchSize: number, maxBytes: number): Batch {
  const m = read.length
  let k = 0
  while (k < m && k < batchSize && (read[k] as ReadRow).settled) k++
  // the JSON size of the rows, as the job will carry them
  let bytes = 2
  let fit = 0
  while (fit < k) {
    bytes += JSON.stringify((read[fit] as ReadRow).row).length + 1
    if (bytes > maxBytes) break
    fit++
  }
  if (fit === 0 && k > 0)
    throw new RowTooLargeError(`one row is larger than DB_TRIGGER_MAX_BATCH_BYTES (${String(maxBytes)} bytes of JSON)`)
  k = fit
  let splitTie = false
  if (k < m && k > 0 && (read[k] as ReadRow).tie) {
    let back = k
    while (back > 0 && (read[back] as ReadRow).tie) back--
    if (back > 0) k = back
    // one value's rows before an unsettled one of the same value: wait for it
    else if (!(read[k] as ReadRow).settled) k = 0
    else splitTie = true
  }
  const rows = read.slice(0, k)
  return {
    rows: rows.map((r) => r.row),
    inserted: rows.map((r) => r.inserted),
    until: rows.at(-1)?.bookmark ?? null,
    more: k < m,
    held: k === 0 && m > 0,
    splitTie,
  }
}

/** A pending batch read again ((bookmark, pending_until]): every row, no cutting (it was cut before). */
export function rereadBatch(read: readonly ReadRow[], until: string, batchSize: number): Batch {
  const rows = read.slice(0, batchSize)
  return {
    rows: rows.map((r) => r.row),
    inserted: rows.map((r) => r.inserted),
    until,
    more: true,
    held: false,
    splitTie: false,
  }
}
