import { useState, type ComponentType } from 'react'
import { api } from '../../api/client.ts'
import type { PageProps } from '../../app/pages.ts'
import { navigate } from '../../app/router.ts'
import { Button, ErrorBanner, Page, Spinner, useAsync } from '../../ui/index.ts'
import { KindActions } from './actions.tsx'
import { apiChangePath, apiReadPath, resourceInfo, resourcePath, type ResourceInfo } from './kinds.ts'
import { formatTime } from './ResourceList.tsx'

/* One resource: its fields, edit and delete, and the kind's own actions (run, test, preview…). */
type Row = Record<string, unknown>

const pages = new Map<string, ComponentType<PageProps>>()
export function viewPage(plural: string): ComponentType<PageProps> {
  let p = pages.get(plural)
  if (p === undefined) {
    const r = resourceInfo(plural)
    p = function ResourceViewPage({ params }: PageProps) {
      return <ResourceView r={r} params={params} />
    }
    pages.set(plural, p)
  }
  return p
}

const HIDDEN = new Set(['id', 'owner_id'])

function ResourceView({ r, params }: { r: ResourceInfo; params: Record<string, string> }) {
  const { data, error, loading } = useAsync(
    (signal) => api<Row>('GET', apiReadPath(r, params), { signal }),
    [r.plural, params['namespace'], params['name'], params['key']],
  )
  const [actionError, setActionError] = useState<unknown>(undefined)
  const [deleting, setDeleting] = useState(false)
  const title = data === undefined ? r.title : `${r.title} ${label(r, data)}`
  const remove = async (row: Row) => {
    if (!window.confirm(`Delete ${r.title.toLowerCase()} ${label(r, row)}? This cannot be undone.`)) return
    setDeleting(true)
    setActionError(undefined)
    try {
      await api('DELETE', apiChangePath(r, row))
      navigate(`/resources/${r.plural}`)
    } catch (e) {
      setActionError(e)
    } finally {
      setDeleting(false)
    }
  }
  return (
    <Page
      title={title}
      actions={
        data === undefined ? undefined : (
          <>
            <Button kind="primary" onClick={() => navigate(`${resourcePath(r, data)}/edit`)}>
              Edit
            </Button>
            <Button kind="danger" busy={deleting} onClick={() => void remove(data)}>
              Delete
            </Button>
          </>
        )
      }
    >
      <ErrorBanner error={error ?? actionError} />
      {loading && data === undefined ? <Spinner /> : null}
      {data === undefined ? null : (
        <>
          <KindActions r={r} row={data} />
          <dl className="fields">
            {Object.entries(data)
              .filter(([k]) => !HIDDEN.has(k))
              .map(([k, v]) => (
                <div key={k} className="field-row">
                  <dt>{k.replace(/_/g, ' ')}</dt>
                  <dd>{show(k, v)}</dd>
                </div>
              ))}
          </dl>
        </>
      )}
    </Page>
  )
}

const label = (r: ResourceInfo, row: Row): string =>
  r.addressing === 'namespaced' ? `${String(row['namespace'])}/${String(row['name'])}` : String(row[r.key])

function show(key: string, v: unknown) {
  if (v === null || v === undefined) return <span className="muted">—</span>
  if (key.endsWith('_at')) return formatTime(v)
  if (typeof v === 'boolean') return v ? 'yes' : 'no'
  if (typeof v === 'string')
    return v.includes('\n') || v.length > 120 ? (
      <pre className="pre" tabIndex={0}>
        {v}
      </pre>
    ) : (
      v
    )
  if (typeof v === 'number') return String(v)
  return (
    <pre className="pre" tabIndex={0}>
      {JSON.stringify(v, null, 2)}
    </pre>
  )
}
