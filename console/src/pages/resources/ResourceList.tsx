import { useMemo, type ComponentType } from 'react'
import { api } from '../../api/client.ts'
import { Link } from '../../app/link.tsx'
import type { PageProps } from '../../app/pages.ts'
import { navigate, setSearch, useLocation } from '../../app/router.ts'
import {
  Button,
  EmptyState,
  ErrorBanner,
  Page,
  Pagination,
  sortRows,
  Spinner,
  Table,
  useAsync,
  type Column,
  type Sort,
} from '../../ui/index.ts'
import { KindListActions } from './actions.tsx'
import { resourceInfo, resourcePath, type ResourceInfo } from './kinds.ts'

/*
 * The list of one kind: namespace filter and paging go to the API (`?namespace=`, `limit`,
 * `offset`); search and sort work on the page of rows shown (the list routes do neither). The
 * state lives in the URL, so a filtered view can be linked and survives a reload.
 */
type Row = Record<string, unknown>
const LIMIT = 50

const pages = new Map<string, ComponentType<PageProps>>()
export function listPage(plural: string): ComponentType<PageProps> {
  let p = pages.get(plural)
  if (p === undefined) {
    const r = resourceInfo(plural)
    p = function ResourceListPage() {
      return <ResourceList r={r} />
    }
    pages.set(plural, p)
  }
  return p
}

function ResourceList({ r }: { r: ResourceInfo }) {
  const { search } = useLocation()
  const namespace = search.get('namespace') ?? ''
  const q = search.get('q') ?? ''
  const offset = Number(search.get('offset') ?? 0) || 0
  const sortKey = search.get('sort') ?? undefined
  const sort: Sort | undefined =
    sortKey === undefined ? undefined : { key: sortKey, dir: search.get('dir') === 'desc' ? 'desc' : 'asc' }
  const { data, error, loading } = useAsync(
    (signal) =>
      api<Row[]>('GET', r.base, {
        query: { namespace: r.addressing === 'namespaced' ? namespace : undefined, limit: LIMIT, offset },
        signal,
      }),
    [r.plural, namespace, offset],
  )
  const rows = useMemo(() => {
    const needle = q.trim().toLowerCase()
    const found = (data ?? []).filter(
      (row) =>
        needle === '' ||
        ['name', 'namespace', 'path', 'description', 'email'].some((k) =>
          String(row[k] ?? '')
            .toLowerCase()
            .includes(needle),
        ),
    )
    return sortRows(found, sort, (row, k) => row[k])
  }, [data, q, sort])
  const columns: Column<Row>[] = [
    ...(r.addressing === 'namespaced'
      ? [{ key: 'namespace', label: 'Namespace', sortable: true, render: (row: Row) => String(row['namespace']) }]
      : []),
    {
      key: r.key,
      label: r.key === 'path' ? 'Path' : 'Name',
      sortable: true,
      render: (row) => <Link href={resourcePath(r, row)}>{String(row[r.key])}</Link>,
    },
    {
      key: 'description',
      label: 'Description',
      render: (row) => <span className="clip">{String(row['description'] ?? '')}</span>,
    },
    {
      key: 'is_active',
      label: 'Active',
      sortable: true,
      render: (row) => (row['is_active'] === false ? 'no' : 'yes'),
    },
    { key: 'updated_at', label: 'Updated', sortable: true, render: (row) => formatTime(row['updated_at']) },
  ]
  const createHref = `/resources/${r.plural}/new`
  return (
    <Page
      title={r.listTitle}
      actions={
        <Button kind="primary" onClick={() => navigate(createHref)}>
          New {r.title.toLowerCase()}
        </Button>
      }
    >
      {r.description === '' ? null : <p className="muted">{r.description}</p>}
      <KindListActions r={r} />
      <form className="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        {r.addressing === 'namespaced' ? (
          <label>
            Namespace{' '}
            <input
              name="namespace"
              defaultValue={namespace}
              placeholder="all (comma-separated)"
              onBlur={(e) => setSearch({ namespace: e.target.value.trim(), offset: undefined })}
              onKeyDown={(e) => {
                if (e.key === 'Enter') setSearch({ namespace: e.currentTarget.value.trim(), offset: undefined })
              }}
            />
          </label>
        ) : null}
        <label>
          Search <input type="search" name="q" value={q} onChange={(e) => setSearch({ q: e.target.value })} />
        </label>
      </form>
      <ErrorBanner error={error} />
      {loading && data === undefined ? (
        <Spinner />
      ) : data === undefined ? null : data.length === 0 && offset === 0 ? (
        <EmptyState title={`No ${r.listTitle.toLowerCase()} ${namespace === '' ? 'yet' : `in ${namespace}`}.`}>
          <p>
            {r.description} <Link href={createHref}>Create the first {r.title.toLowerCase()}</Link>.
          </p>
        </EmptyState>
      ) : (
        <>
          <Table
            caption={r.listTitle}
            columns={columns}
            rows={rows}
            rowKey={(row) => String(row['id'] ?? row[r.key])}
            sort={sort}
            onSort={(s) => setSearch({ sort: s.key, dir: s.dir })}
          />
          {rows.length === 0 ? <p className="muted">Nothing on this page matches “{q}”.</p> : null}
          <Pagination
            offset={offset}
            limit={LIMIT}
            count={data.length}
            onOffset={(o) => setSearch({ offset: o || undefined })}
          />
        </>
      )}
    </Page>
  )
}

export function formatTime(v: unknown): string {
  if (typeof v !== 'string') return ''
  const d = new Date(v)
  return Number.isNaN(d.getTime()) ? v : d.toLocaleString()
}
