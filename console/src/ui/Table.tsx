import type { ReactNode } from 'react'
import { Button } from './Button.tsx'

/*
 * A data table with sortable headers (aria-sort) and offset pagination. Sorting and paging state
 * belong to the caller (usually the URL), so a page's view can be linked.
 */
export interface Column<R> {
  key: string
  label: string
  render: (row: R) => ReactNode
  /** Sortable by this value (the caller sorts). */
  sortable?: boolean
}

export interface Sort {
  key: string
  dir: 'asc' | 'desc'
}

export function Table<R>({
  caption,
  columns,
  rows,
  rowKey,
  sort,
  onSort,
}: {
  caption: string
  columns: Column<R>[]
  rows: R[]
  rowKey: (row: R) => string
  sort?: Sort | undefined
  onSort?: (sort: Sort) => void
}) {
  return (
    <div className="table-wrap">
      <table className="table">
        <caption className="sr-only">{caption}</caption>
        <thead>
          <tr>
            {columns.map((c) => {
              const active = sort?.key === c.key
              const ariaSort = active ? (sort?.dir === 'asc' ? 'ascending' : 'descending') : undefined
              return (
                <th key={c.key} scope="col" aria-sort={ariaSort}>
                  {c.sortable === true && onSort !== undefined ? (
                    <button
                      type="button"
                      className="th-sort"
                      onClick={() => onSort({ key: c.key, dir: active && sort?.dir === 'asc' ? 'desc' : 'asc' })}
                    >
                      {c.label}
                      <span aria-hidden="true">{active ? (sort?.dir === 'asc' ? ' ▲' : ' ▼') : ''}</span>
                    </button>
                  ) : (
                    c.label
                  )}
                </th>
              )
            })}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={rowKey(r)}>
              {columns.map((c) => (
                <td key={c.key}>{c.render(r)}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}

/** Previous/next paging by offset: `hasMore` when the page came back full. */
export function Pagination({
  offset,
  limit,
  count,
  onOffset,
}: {
  offset: number
  limit: number
  /** Rows on this page. */
  count: number
  onOffset: (offset: number) => void
}) {
  return (
    <nav className="pagination" aria-label="Pages">
      <Button disabled={offset === 0} onClick={() => onOffset(Math.max(0, offset - limit))}>
        Previous
      </Button>
      <span className="muted">{count === 0 ? 'none' : `${String(offset + 1)}–${String(offset + count)}`}</span>
      <Button disabled={count < limit} onClick={() => onOffset(offset + limit)}>
        Next
      </Button>
    </nav>
  )
}

/** Sorts rows by a column's value (strings case-insensitively), for the pages that sort in the browser. */
export function sortRows<R>(rows: R[], sort: Sort | undefined, value: (row: R, key: string) => unknown): R[] {
  if (sort === undefined) return rows
  const sign = sort.dir === 'asc' ? 1 : -1
  return [...rows].sort((a, b) => {
    const x = value(a, sort.key)
    const y = value(b, sort.key)
    if (typeof x === 'number' && typeof y === 'number') return (x - y) * sign
    return String(x ?? '').localeCompare(String(y ?? ''), undefined, { sensitivity: 'base' }) * sign
  })
}
