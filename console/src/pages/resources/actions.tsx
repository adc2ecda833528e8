import { useState } from 'react'
import { api } from '../../api/client.ts'
import type { ResponseOf } from '../../api/ops.ts'
import { sessionInfo } from '../../app/session.ts'
import { navigate } from '../../app/router.ts'
import { ActionForm, Button, EmptyState, ErrorBanner, Field, Table, useAction, useAsync } from '../../ui/index.ts'
import { resourcePath, type ResourceInfo } from './kinds.ts'

/*
 * The kinds' own actions, where they are cheap: run a query (a table of rows), test a database
 * connection, render a template, preview and share a component (its page on the API's origin in
 * a sandboxed frame), a store's states; on the connectors list, import from an OpenAPI document.
 */
type Row = Record<string, unknown>
const enc = encodeURIComponent

export function KindActions({ r, row }: { r: ResourceInfo; row: Row }) {
  switch (r.plural) {
    case 'queries':
      return <RunQuery row={row} />
    case 'database-connections':
      return <TestConnection row={row} />
    case 'templates':
      return <RenderTemplate row={row} />
    case 'components':
      return <ComponentPreview row={row} />
    case 'stores':
      return <StoreStates row={row} />
    default:
      return null
  }
}

export function KindListActions({ r }: { r: ResourceInfo }) {
  return r.plural === 'connectors' ? <ImportConnector r={r} /> : null
}

function parseJson(text: string): Record<string, unknown> {
  if (text.trim() === '') return {}
  const v = JSON.parse(text) as unknown
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('the input must be a JSON object')
  return v as Record<string, unknown>
}

function RunQuery({ row }: { row: Row }) {
  const [input, setInput] = useState('{}')
  const [result, setResult] = useState<ResponseOf<'queries.execute-management'> | undefined>(undefined)
  const columns = result?.rows[0] === undefined ? [] : Object.keys(result.rows[0])
  return (
    <>
      <ActionForm
        label="Run query"
        submit={async () =>
          setResult(
            await api<ResponseOf<'queries.execute-management'>>(
              'POST',
              `/queries/${enc(String(row['namespace']))}/${enc(String(row['name']))}/execute`,
              { body: { input: parseJson(input) } },
            ),
          )
        }
      >
        {(error) => (
          <Field label="Input (JSON)" error={error?.fieldMessage('input')}>
            {(c) => (
              <textarea {...c} className="mono" rows={3} value={input} onChange={(e) => setInput(e.target.value)} />
            )}
          </Field>
        )}
      </ActionForm>
      {result === undefined ? null : (
        <section aria-label="Query result">
          <p className="muted" role="status">
            {result.operation === 'write'
              ? `${String(result.affected_rows ?? 0)} rows affected`
              : `${String(result.row_count)} rows${result.truncated ? ' (truncated)' : ''}`}{' '}
            in {result.duration_ms.toFixed(1)} ms
          </p>
          {result.rows.length === 0 ? null : (
            <Table
              caption="Rows"
              rows={result.rows.map((x, i) => ({ ...x, __i: i }))}
              rowKey={(x) => String(x['__i'])}
              columns={columns.map((c) => ({
                key: c,
                label: c,
                render: (x: Row) => (typeof x[c] === 'object' ? JSON.stringify(x[c]) : String(x[c] ?? '')),
              }))}
            />
          )}
        </section>
      )}
    </>
  )
}

function TestConnection({ row }: { row: Row }) {
  const a = useAction()
  const [result, setResult] = useState<ResponseOf<'database-connections.test-saved'> | undefined>(undefined)
  return (
    <div className="actions-box">
      <Button
        kind="primary"
        busy={a.busy}
        onClick={() =>
          void a.run(async () =>
            setResult(
              await api<ResponseOf<'database-connections.test-saved'>>(
                'POST',
                `/database-connections/${enc(String(row['id']))}/test`,
              ),
            ),
          )
        }
      >
        Test connection
      </Button>
      <ErrorBanner error={a.error} />
      {result === undefined ? null : (
        <p role="status">
          {result.success ? 'Connected' : 'Failed'}: {result.message}
          {result.server_version === null ? '' : ` (server ${result.server_version})`} in {result.duration_ms} ms
          {result.warnings.length > 0 ? ` — ${result.warnings.join('; ')}` : ''}
        </p>
      )}
    </div>
  )
}

function RenderTemplate({ row }: { row: Row }) {
  const [variables, setVariables] = useState('{}')
  const [out, setOut] = useState<ResponseOf<'templates.render-v1'> | undefined>(undefined)
  return (
    <>
      <ActionForm
        label="Render preview"
        submit={async () =>
          setOut(
            await api<ResponseOf<'templates.render-v1'>>('POST', `/templates/${enc(String(row['id']))}/render`, {
              body: { variables: parseJson(variables) },
            }),
          )
        }
      >
        {(error) => (
          <Field label="Variables (JSON)" error={error?.fieldMessage('variables')}>
            {(c) => (
              <textarea
                {...c}
                className="mono"
                rows={3}
                value={variables}
                onChange={(e) => setVariables(e.target.value)}
              />
            )}
          </Field>
        )}
      </ActionForm>
      {out === undefined ? null : (
        <section aria-label="Rendered template">
          {out.title === null ? null : <h2>{out.title}</h2>}
          {/* the rendered HTML in a sandboxed frame: no script, no same-origin access */}
          <iframe className="preview-frame" title="Rendered HTML" sandbox="" srcDoc={out.html_content} />
          {out.text_content === null ? null : (
            <pre className="pre" tabIndex={0}>
              {out.text_content}
            </pre>
          )}
        </section>
      )}
    </>
  )
}

type Share = ResponseOf<'components.shares.create'>

function ComponentPreview({ row }: { row: Row }) {
  const base = `/components/${enc(String(row['namespace']))}/${enc(String(row['name']))}`
  const shares = useAsync((signal) => api<Share[]>('GET', `${base}/shares`, { signal }), [base])
  const info = useAsync(() => sessionInfo(), [])
  const a = useAction()
  const [preview, setPreview] = useState<string | undefined>(undefined)
  const absolute = (url: string) => (/^https?:/.test(url) ? url : `${info.data?.api_base ?? ''}${url}`)
  return (
    <div className="actions-box">
      <div className="row-actions">
        <Button
          kind="primary"
          busy={a.busy}
          onClick={() =>
            void a.run(async () => {
              // a short-lived share link is the preview: the page renders on the API's origin
              const s = await api<Share>('POST', `${base}/shares`, { body: { expires_in: 3600 } })
              setPreview(absolute(s.url))
              shares.reload()
            })
          }
        >
          Preview
        </Button>
        <Button
          busy={a.busy}
          onClick={() =>
            void a.run(async () => {
              await api('POST', `${base}/compile`)
            })
          }
        >
          Compile
        </Button>
      </div>
      <ErrorBanner error={a.error ?? shares.error} />
      {preview === undefined ? null : (
        // opaque origin: scripts run, but with no access to the console or the API origin's storage
        <iframe className="preview-frame" title="Component preview" sandbox="allow-scripts allow-forms" src={preview} />
      )}
      <h2>Share links</h2>
      {shares.data === undefined || shares.data.length === 0 ? (
        <p className="muted">No share link yet: Preview makes one valid for an hour.</p>
      ) : (
        <Table
          caption="Share links"
          rows={shares.data}
          rowKey={(s) => s.token}
          columns={[
            {
              key: 'url',
              label: 'Link',
              render: (s) => (
                <a href={absolute(s.url)} target="_blank" rel="noopener noreferrer">
                  {absolute(s.url)}
                </a>
              ),
            },
            {
              key: 'views',
              label: 'Views',
              render: (s) => `${String(s.views)}${s.max_views === null ? '' : ` / ${String(s.max_views)}`}`,
            },
            {
              key: 'expires',
              label: 'Expires',
              render: (s) => (s.expires_at === null ? 'never' : new Date(s.expires_at).toLocaleString()),
            },
            {
              key: 'actions',
              label: 'Actions',
              render: (s) => (
                <Button
                  kind="danger"
                  busy={a.busy}
                  onClick={() =>
                    void a.run(async () => {
                      await api('DELETE', `${base}/shares/${enc(s.token)}`)
                      shares.reload()
                    })
                  }
                >
                  Revoke
                </Button>
              ),
            },
          ]}
        />
      )}
    </div>
  )
}

type State = ResponseOf<'states.list'>[number]

function StoreStates({ row }: { row: Row }) {
  const path = `/stores/${enc(String(row['namespace']))}/${enc(String(row['name']))}/states`
  const states = useAsync(
    (signal) => api<State[]>('GET', path, { runtime: true, query: { limit: 100 }, signal }),
    [path],
  )
  return (
    <section className="actions-box" aria-label="States">
      <h2>States</h2>
      <ErrorBanner error={states.error} />
      {states.data === undefined ? null : states.data.length === 0 ? (
        <EmptyState title="No state in this store yet.">
          <p>Functions and agents write states with the store's API (/stores/…/states).</p>
        </EmptyState>
      ) : (
        <Table
          caption="States"
          rows={states.data}
          rowKey={(s) => s.id}
          columns={[
            { key: 'key', label: 'Key', render: (s) => <span className="mono">{s.key}</span> },
            {
              key: 'value',
              label: 'Value',
              render: (s) => <span className="mono clip">{JSON.stringify(s.value)}</span>,
            },
            { key: 'visibility', label: 'Visibility', render: (s) => s.visibility },
            { key: 'updated', label: 'Updated', render: (s) => new Date(s.updated_at).toLocaleString() },
          ]}
        />
      )}
    </section>
  )
}

function ImportConnector({ r }: { r: ResourceInfo }) {
  const [open, setOpen] = useState(false)
  const [namespace, setNamespace] = useState('')
  const [name, setName] = useState('')
  const [document, setDocument] = useState('')
  const [baseUrl, setBaseUrl] = useState('')
  if (!open) return <Button onClick={() => setOpen(true)}>Import from OpenAPI</Button>
  return (
    <ActionForm
      label="Import connector"
      submit={async () => {
        const text = document.trim()
        const openapi = text.startsWith('{') ? (JSON.parse(text) as Record<string, unknown>) : text
        const c = await api<Row>('POST', '/connectors/import', {
          body: {
            ...(namespace === '' ? {} : { namespace }),
            name,
            openapi,
            ...(baseUrl === '' ? {} : { base_url: baseUrl }),
          },
        })
        navigate(resourcePath(r, c))
      }}
    >
      {(error) => (
        <>
          <div className="row">
            <Field label="Namespace" error={error?.fieldMessage('namespace')}>
              {(c) => (
                <input {...c} value={namespace} placeholder="default" onChange={(e) => setNamespace(e.target.value)} />
              )}
            </Field>
            <Field label="Connector name" required error={error?.fieldMessage('name')}>
              {(c) => <input {...c} value={name} onChange={(e) => setName(e.target.value)} />}
            </Field>
            <Field label="Base URL" help="if the document has none" error={error?.fieldMessage('base_url')}>
              {(c) => <input {...c} value={baseUrl} onChange={(e) => setBaseUrl(e.target.value)} />}
            </Field>
          </div>
          <Field label="OpenAPI document (JSON or YAML)" required error={error?.fieldMessage('openapi')}>
            {(c) => (
              <textarea
                {...c}
                className="mono"
                rows={8}
                value={document}
                onChange={(e) => setDocument(e.target.value)}
              />
            )}
          </Field>
        </>
      )}
    </ActionForm>
  )
}
