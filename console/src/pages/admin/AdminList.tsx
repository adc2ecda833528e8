import { api } from '../../api/client.ts'
import { setSearch, useLocation } from '../../app/router.ts'
import {
  Button,
  ErrorBanner,
  Pagination,
  Spinner,
  Table,
  useAsync,
  type Column,
  type useAction,
} from '../../ui/index.ts'

/*
 * What the admin pages (users, roles, API keys) share under their create form: the list (a page at
 * a time, the offset in the URL, for the ones that can grow long), its load error or the last row
 * action's, and the rows' Delete button.
 */
const LIMIT = 50

/** `GET path`, a page of LIMIT rows at the URL's `?offset=`. */
export function usePagedList<R>(path: string) {
  const { search } = useLocation()
  const offset = Number(search.get('offset') ?? 0) || 0
  const list = useAsync((signal) => api<R[]>('GET', path, { query: { limit: LIMIT, offset }, signal }), [offset])
  return { ...list, offset }
}

/** The list's error (else the last row action's), a spinner while it first loads, the table; the pager when `offset` is given. */
export function AdminTable<R>({
  list,
  actionError,
  caption,
  rowKey,
  columns,
  offset,
}: {
  list: { data: R[] | undefined; error: unknown; loading: boolean }
  actionError: unknown
  caption: string
  rowKey: (row: R) => string
  columns: Column<R>[]
  offset?: number
}) {
  return (
    <>
      <ErrorBanner error={list.error ?? actionError} />
      {list.data === undefined ? (
        list.loading ? (
          <Spinner />
        ) : null
      ) : (
        <>
          <Table caption={caption} rows={list.data} rowKey={rowKey} columns={columns} />
          {offset === undefined ? null : (
            <Pagination
              offset={offset}
              limit={LIMIT}
              count={list.data.length}
              onOffset={(o) => setSearch({ offset: o || undefined })}
            />
          )}
        </>
      )}
    </>
  )
}

/** A row's Delete button: asked for (`Delete <what>?`), then `remove` (which reloads the list); busy while a row action runs. */
export function DeleteButton({
  action,
  what,
  name,
  remove,
}: {
  action: Pick<ReturnType<typeof useAction>, 'busy' | 'run'>
  what: string
  /** For screen readers: which row's button this is. */
  name: string
  remove: () => Promise<void>
}) {
  return (
    <Button
      kind="danger"
      busy={action.busy}
      onClick={() =>
        void action.run(async () => {
          if (!window.confirm(`Delete ${what}?`)) return
          await remove()
        })
      }
    >
      Delete<span className="sr-only"> {name}</span>
    </Button>
  )
}
