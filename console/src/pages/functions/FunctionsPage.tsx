import { api } from '../../api/client.ts'
import { Link } from '../../app/link.tsx'
import { ErrorBanner, Page, Spinner, Table, useAsync, EmptyState } from '../../ui/index.ts'
import type { FunctionRecord } from '../work/types.ts'

/* Functions (`/functions`): the list; a function opens at /functions/<ns>/<name>. */
export default function FunctionsPage() {
  const { data, error, loading } = useAsync(
    (signal) => api<FunctionRecord[]>('GET', '/functions', { query: { limit: 1000 }, signal }),
    [],
  )
  return (
    <Page
      title="Functions"
      actions={
        <Link className="btn btn-primary" href="/functions/new">
          New function
        </Link>
      }
    >
      <ErrorBanner error={error} />
      {loading ? <Spinner /> : null}
      {data !== undefined && data.length === 0 ? (
        <EmptyState title="No functions yet.">
          <p>Create one, write its handler in Python and run it.</p>
        </EmptyState>
      ) : null}
      {data !== undefined && data.length > 0 ? (
        <Table
          caption="Functions"
          rows={data}
          rowKey={(f) => f.id}
          columns={[
            {
              key: 'name',
              label: 'Function',
              render: (f) => <Link href={`/functions/${f.namespace}/${f.name}`}>{`${f.namespace}/${f.name}`}</Link>,
            },
            { key: 'description', label: 'Description', render: (f) => f.description },
            { key: 'approval', label: 'Approval', render: (f) => (f.requires_approval ? 'required' : '') },
            { key: 'updated', label: 'Updated', render: (f) => new Date(f.updated_at).toLocaleString() },
          ]}
        />
      ) : null}
    </Page>
  )
}
