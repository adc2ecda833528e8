import { api } from '../../api/client.ts'
import type { ResponseOf } from '../../api/ops.ts'
import { Button, EmptyState, ErrorBanner, Page, Spinner, Table, useAsync } from '../../ui/index.ts'
import { formatTime } from '../resources/ResourceList.tsx'

/* The worker processes by their heartbeats (GET /api/v1/queue/workers). */
type Worker = ResponseOf<'queue.workers'>[number]

export default function WorkersPage() {
  const r = useAsync((signal) => api<Worker[]>('GET', '/queue/workers', { signal }), [])
  return (
    <Page title="Workers" actions={<Button onClick={r.reload}>Refresh</Button>}>
      <ErrorBanner error={r.error} />
      {r.data === undefined ? (
        r.loading ? (
          <Spinner />
        ) : null
      ) : r.data.length === 0 ? (
        <EmptyState title="No worker is running.">
          <p>Start a process with ROLES=workers (or all) and it appears here within a heartbeat.</p>
        </EmptyState>
      ) : (
        <Table
          caption="Workers"
          rows={r.data}
          rowKey={(w) => `${w.role}:${w.node_id}`}
          columns={[
            { key: 'role', label: 'Role', render: (w) => w.role },
            { key: 'node', label: 'Node', render: (w) => <span className="mono">{w.node_id}</span> },
            { key: 'seen', label: 'Last seen', render: (w) => formatTime(w.last_seen) },
            {
              key: 'info',
              label: 'Info',
              render: (w) => (
                <span className="mono">
                  {Object.entries(w.info)
                    .map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
                    .join(' ')}
                </span>
              ),
            },
          ]}
        />
      )}
    </Page>
  )
}
