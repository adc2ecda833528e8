import { api } from '../../api/client.ts'
import { Link } from '../../app/link.tsx'
import { EmptyState, ErrorBanner, Page, Spinner, Table, useAsync } from '../../ui/index.ts'
import type { Agent } from '../work/types.ts'

/* Agents (`/agents`): the list; an agent opens for editing at /agents/<ns>/<name>. */
export default function AgentsPage() {
  const { data, error, loading } = useAsync(
    (signal) => api<Agent[]>('GET', '/agents', { query: { limit: 1000 }, signal }),
    [],
  )
  return (
    <Page
      title="Agents"
      actions={
        <Link className="btn btn-primary" href="/agents/new">
          New agent
        </Link>
      }
    >
      <ErrorBanner error={error} />
      {loading ? <Spinner /> : null}
      {data !== undefined && data.length === 0 ? <EmptyState title="No agents yet." /> : null}
      {data !== undefined && data.length > 0 ? (
        <Table
          caption="Agents"
          rows={data}
          rowKey={(a) => a.id}
          columns={[
            {
              key: 'name',
              label: 'Agent',
              render: (a) => <Link href={`/agents/${a.namespace}/${a.name}`}>{`${a.namespace}/${a.name}`}</Link>,
            },
            { key: 'description', label: 'Description', render: (a) => a.description },
            {
              key: 'tools',
              label: 'Tools',
              render: (a) => [...a.enabled_functions, ...a.enabled_agents.map((x) => `agent ${x}`)].join(', '),
            },
            {
              key: 'chat',
              label: 'Chat',
              render: (a) => (
                <Link
                  href={`/chat?agent=${encodeURIComponent(`${a.namespace}/${a.name}`)}`}
                  aria-label={`Chat with ${a.namespace}/${a.name}`}
                >
                  Chat
                </Link>
              ),
            },
          ]}
        />
      ) : null}
    </Page>
  )
}
