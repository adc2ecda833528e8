import { api } from '../../api/client.ts'
import type { ResponseOf } from '../../api/ops.ts'
import { Button, ErrorBanner, Page, Spinner, Table, useAction, useAsync } from '../../ui/index.ts'

/* The sandbox container pool (GET /api/v1/containers/stats) and reloading it. */
type Stats = ResponseOf<'containers.stats'>
type Node = Stats['nodes'][number]

export default function ContainersPage() {
  const r = useAsync((signal) => api<Stats>('GET', '/containers/stats', { signal }), [])
  const action = useAction()
  const s = r.data
  return (
    <Page
      title="Containers"
      actions={
        <>
          <Button onClick={r.reload}>Refresh</Button>
          <Button
            busy={action.busy}
            onClick={() =>
              void action.run(async () => {
                await api('POST', '/containers/reload', { body: {} })
                r.reload()
              })
            }
          >
            Reload the pool
          </Button>
        </>
      }
    >
      <ErrorBanner error={r.error ?? action.error} />
      {s === undefined ? (
        r.loading ? (
          <Spinner />
        ) : null
      ) : (
        <>
          <p>
            {s.in_use} in use, {s.idle} idle, {s.total} in all (at most {s.max_size}).
          </p>
          <Table
            caption="Sandbox nodes"
            rows={s.nodes}
            rowKey={(n: Node) => JSON.stringify(n).slice(0, 200)}
            columns={[
              { key: 'node', label: 'Node', render: (n: Node) => String(n['node_id'] ?? n['name'] ?? '') },
              {
                key: 'detail',
                label: 'Detail',
                render: (n: Node) => (
                  <span className="mono">
                    {Object.entries(n)
                      .filter(([k]) => k !== 'node_id' && k !== 'name')
                      .map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
                      .join(' ')}
                  </span>
                ),
              },
            ]}
          />
        </>
      )}
    </Page>
  )
}
