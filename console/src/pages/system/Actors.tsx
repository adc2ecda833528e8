import { api } from '../../api/client.ts'
import type { ResponseOf } from '../../api/ops.ts'
import { Button, ErrorBanner, Page, Spinner, Table, useAction, useAsync } from '../../ui/index.ts'
import { formatTime } from '../resources/ResourceList.tsx'

/* Actor hosts and shards (GET /api/v1/system/actors); drain and undrain a host. */
type Actors = ResponseOf<'system.actors'>

export default function ActorsPage() {
  const r = useAsync((signal) => api<Actors>('GET', '/system/actors', { signal }), [])
  const action = useAction()
  const a = r.data
  const hostAction = (node: string, verb: 'drain' | 'undrain') =>
    void action.run(async () => {
      await api('POST', `/system/actors/hosts/${encodeURIComponent(node)}/${verb}`, { body: {} })
      r.reload()
    })
  return (
    <Page title="Actor shards" actions={<Button onClick={r.reload}>Refresh</Button>}>
      <ErrorBanner error={r.error ?? action.error} />
      {a === undefined ? (
        r.loading ? (
          <Spinner />
        ) : null
      ) : (
        <>
          <h2>Hosts</h2>
          <Table
            caption="Actor hosts"
            rows={a.hosts}
            rowKey={(h) => h.node_id}
            columns={[
              { key: 'node', label: 'Node', render: (h) => <span className="mono">{h.node_id}</span> },
              { key: 'state', label: 'State', render: (h) => h.state },
              { key: 'partitions', label: 'Partitions', render: (h) => String(h.partitions) },
              { key: 'seen', label: 'Last seen', render: (h) => formatTime(h.last_seen) },
              {
                key: 'actions',
                label: 'Actions',
                render: (h) =>
                  h.state === 'active' ? (
                    <Button busy={action.busy} onClick={() => hostAction(h.node_id, 'drain')}>
                      Drain<span className="sr-only"> {h.node_id}</span>
                    </Button>
                  ) : h.state === 'gone' ? null : (
                    <Button busy={action.busy} onClick={() => hostAction(h.node_id, 'undrain')}>
                      Undrain<span className="sr-only"> {h.node_id}</span>
                    </Button>
                  ),
              },
            ]}
          />
          <h2>Actor types</h2>
          <Table
            caption="Actor types"
            rows={a.types}
            rowKey={(t) => t.type}
            columns={[
              { key: 'type', label: 'Type', render: (t) => t.type },
              { key: 'partitions', label: 'Partitions', render: (t) => String(t.partitions) },
              { key: 'owned', label: 'Owned', render: (t) => String(t.owned) },
              { key: 'backlog', label: 'Backlog', render: (t) => String(t.backlog) },
              {
                key: 'unowned',
                label: 'Without owner',
                render: (t) => String(t.shards.filter((s) => s.owner === null).length),
              },
            ]}
          />
        </>
      )}
    </Page>
  )
}
