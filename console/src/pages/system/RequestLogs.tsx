import { api } from '../../api/client.ts'
import type { QueryOf, ResponseOf } from '../../api/ops.ts'
import { setSearch, useLocation } from '../../app/router.ts'
import { EmptyState, ErrorBanner, Page, Pagination, Spinner, Table, useAsync } from '../../ui/index.ts'
import { formatTime } from '../resources/ResourceList.tsx'

/* Request logs (GET /api/v1/request-logs): filters in the URL, paged. */
type Logs = ResponseOf<'request-logs.list'>
const LIMIT = 100
const CLASSES = ['2xx', '3xx', '4xx', '5xx'] as const

export default function RequestLogsPage() {
  const { search } = useLocation()
  const offset = Number(search.get('offset') ?? 0) || 0
  const route = search.get('route') ?? ''
  const statusClass = search.get('status_class') ?? ''
  const minMs = search.get('min_duration_ms') ?? ''
  const query: QueryOf<'request-logs.list'> = { limit: LIMIT, offset }
  if (route !== '') query.route = route
  if ((CLASSES as readonly string[]).includes(statusClass)) query.status_class = statusClass as (typeof CLASSES)[number]
  if (minMs !== '' && Number.isFinite(Number(minMs))) query.min_duration_ms = Number(minMs)
  const r = useAsync(
    (signal) => api<Logs>('GET', '/request-logs', { query: { ...query }, signal }),
    [offset, route, statusClass, minMs],
  )
  return (
    <Page title="Request logs">
      <form className="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <label>
          Route{' '}
          <input
            defaultValue={route}
            placeholder="e.g. agents.list"
            onBlur={(e) => setSearch({ route: e.target.value.trim(), offset: undefined })}
          />
        </label>
        <label>
          Status{' '}
          <select value={statusClass} onChange={(e) => setSearch({ status_class: e.target.value, offset: undefined })}>
            <option value="">any</option>
            {CLASSES.map((c) => (
              <option key={c} value={c}>
                {c}
              </option>
            ))}
          </select>
        </label>
        <label>
          Slower than (ms){' '}
          <input
            type="number"
            min={0}
            defaultValue={minMs}
            onBlur={(e) => setSearch({ min_duration_ms: e.target.value, offset: undefined })}
          />
        </label>
      </form>
      <ErrorBanner error={r.error} />
      {r.data === undefined ? (
        r.loading ? (
          <Spinner />
        ) : null
      ) : r.data.items.length === 0 && offset === 0 ? (
        <EmptyState title="No requests logged.">
          <p>Request logs are kept when ANALYTICS_HOST names a ClickHouse server (docs/operations.md).</p>
        </EmptyState>
      ) : (
        <>
          <p className="muted">{r.data.total} requests match.</p>
          <Table
            caption="Requests"
            rows={r.data.items}
            rowKey={(x) => x.request_id}
            columns={[
              { key: 'time', label: 'Time', render: (x) => formatTime(x.time) },
              { key: 'method', label: 'Method', render: (x) => x.method },
              { key: 'route', label: 'Route', render: (x) => <span className="mono">{x.route}</span> },
              { key: 'status', label: 'Status', render: (x) => String(x.status) },
              { key: 'ms', label: 'ms', render: (x) => x.duration_ms.toFixed(1) },
              { key: 'user', label: 'User', render: (x) => <span className="mono">{x.user_id}</span> },
              { key: 'ns', label: 'Namespace', render: (x) => x.namespace },
            ]}
          />
          <Pagination
            offset={offset}
            limit={LIMIT}
            count={r.data.items.length}
            onOffset={(o) => setSearch({ offset: o || undefined })}
          />
        </>
      )}
    </Page>
  )
}
