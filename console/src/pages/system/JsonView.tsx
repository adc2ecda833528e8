import { api } from '../../api/client.ts'
import { ErrorBanner, Page, Spinner, useAsync } from '../../ui/index.ts'

/** A page that shows one API answer as it is (the System pages until each gets its own view). */
export function JsonView({ title, path }: { title: string; path: string }) {
  const { data, error, loading } = useAsync((signal) => api<unknown>('GET', path, { signal }), [path])
  return (
    <Page title={title}>
      <ErrorBanner error={error} />
      {loading ? <Spinner /> : null}
      {data === undefined ? null : <pre className="pre">{JSON.stringify(data, null, 2)}</pre>}
    </Page>
  )
}
