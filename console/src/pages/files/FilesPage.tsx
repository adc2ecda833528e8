import { useCallback, useEffect, useRef, useState, type FormEvent } from 'react'
import { api, proxyUrl } from '../../api/client.ts'
import { Link } from '../../app/link.tsx'
import type { PageProps } from '../../app/pages.ts'
import { navigate } from '../../app/router.ts'
import { Button, EmptyState, ErrorBanner, Field, Page, Progress, Spinner, useAsync } from '../../ui/index.ts'
import type { Collection, FileRecord } from '../work/types.ts'
import { uploadFile } from './upload.ts'

/*
 * Collections and their files (`/collections`, `/collections/<ns>/<name>`): pick or create a
 * collection, upload files with progress (a file of an existing name becomes its next version),
 * open a file to see every version and download any of them.
 */
export default function FilesPage({ params }: PageProps) {
  const ns = params['namespace']
  const name = params['name']
  const current = ns === undefined || name === undefined ? undefined : `${ns}/${name}`
  const {
    data: collections,
    error,
    loading,
    reload,
  } = useAsync((signal) => api<Collection[]>('GET', '/collections', { query: { limit: 1000 }, signal }), [])
  const [newNs, setNewNs] = useState('default')
  const [newName, setNewName] = useState('')
  const [createError, setCreateError] = useState<unknown>(undefined)

  const create = async (e: FormEvent) => {
    e.preventDefault()
    setCreateError(undefined)
    try {
      await api('POST', '/collections', { body: { namespace: newNs, name: newName } })
      setNewName('')
      reload()
      navigate(`/collections/${newNs}/${newName}`)
    } catch (err) {
      setCreateError(err)
    }
  }

  return (
    <Page title={current === undefined ? 'Files' : `Files of ${current}`}>
      <ErrorBanner error={error} />
      <div className="files-layout">
        <nav className="panel" aria-labelledby="collections-title">
          <h2 id="collections-title">Collections</h2>
          {loading ? <Spinner /> : null}
          {collections !== undefined && collections.length === 0 ? <p className="muted">No collections yet.</p> : null}
          <ul className="link-list">
            {(collections ?? []).map((c) => {
              const ref = `${c.namespace}/${c.name}`
              return (
                <li key={ref}>
                  <Link
                    href={`/collections/${ref}`}
                    className="chat-link"
                    aria-current={ref === current ? 'page' : undefined}
                  >
                    {ref}
                  </Link>
                </li>
              )
            })}
          </ul>
          <form onSubmit={(e) => void create(e)} aria-label="New collection">
            <div className="form-row">
              <Field label="Namespace" required>
                {(c) => <input {...c} value={newNs} onChange={(e) => setNewNs(e.target.value)} />}
              </Field>
              <Field label="Name" required>
                {(c) => <input {...c} value={newName} onChange={(e) => setNewName(e.target.value)} />}
              </Field>
            </div>
            <ErrorBanner error={createError} />
            <Button type="submit">New collection</Button>
          </form>
        </nav>
        {current === undefined ? (
          <p className="muted">Pick a collection.</p>
        ) : (
          <CollectionFiles key={current} collection={current} />
        )}
      </div>
    </Page>
  )
}

function CollectionFiles({ collection }: { collection: string }) {
  const [files, setFiles] = useState<FileRecord[] | undefined>(undefined)
  const [open, setOpen] = useState<FileRecord | null>(null)
  const [progress, setProgress] = useState<{ name: string; sent: number; total: number } | null>(null)
  const [error, setError] = useState<unknown>(undefined)
  const [done, setDone] = useState<string | null>(null)
  const input = useRef<HTMLInputElement>(null)
  const base = `/files/${collection}`

  const load = useCallback(async () => {
    try {
      setFiles(await api<FileRecord[]>('GET', base, { runtime: true, query: { limit: 1000 } }))
    } catch (err) {
      setError(err)
    }
  }, [base])
  useEffect(() => {
    void load()
  }, [load])

  const openFile = async (file: string) => {
    try {
      setOpen(await api<FileRecord>('GET', `${base}/${encodeURIComponent(file)}/info`, { runtime: true }))
    } catch (err) {
      setError(err)
    }
  }

  const upload = async (e: FormEvent) => {
    e.preventDefault()
    const chosen = Array.from(input.current?.files ?? [])
    const [ns, name] = collection.split('/') as [string, string]
    setError(undefined)
    setDone(null)
    for (const f of chosen) {
      try {
        setProgress({ name: f.name, sent: 0, total: f.size })
        const saved = await uploadFile(ns, name, f, {
          onProgress: (sent, total) => setProgress({ name: f.name, sent, total }),
        })
        setDone(`${saved.name}: version ${String(saved.current_version)} uploaded.`)
        if (open?.name === saved.name) await openFile(saved.name)
      } catch (err) {
        setError(err)
      }
    }
    setProgress(null)
    if (input.current !== null) input.current.value = ''
    await load()
  }

  const remove = async (file: string) => {
    if (!window.confirm(`Delete ${file} and all its versions?`)) return
    try {
      await api('DELETE', `${base}/${encodeURIComponent(file)}`, { runtime: true })
      if (open?.name === file) setOpen(null)
      await load()
    } catch (err) {
      setError(err)
    }
  }

  const download = (file: string, version?: number) =>
    proxyUrl(`${base}/${encodeURIComponent(file)}`, true, version === undefined ? {} : { version })

  return (
    <section className="panel files-main" aria-labelledby="files-title">
      <h2 id="files-title">{collection}</h2>
      <form className="upload" onSubmit={(e) => void upload(e)} aria-label="Upload">
        <label htmlFor="upload-input">Files to upload</label>
        <input id="upload-input" ref={input} type="file" multiple />
        <Button kind="primary" type="submit" busy={progress !== null}>
          Upload
        </Button>
      </form>
      {progress !== null && (
        <div className="upload-progress" data-sent={progress.sent} data-total={progress.total}>
          <span>
            {progress.name}: {Math.round((100 * progress.sent) / (progress.total || 1))}%
          </span>
          <Progress value={progress.sent / (progress.total || 1)} label={`Uploading ${progress.name}`} />
        </div>
      )}
      <ErrorBanner error={error} />
      {done !== null ? (
        <p className="muted" role="status">
          {done}
        </p>
      ) : null}
      {files === undefined ? <Spinner /> : null}
      {files !== undefined && files.length === 0 ? <EmptyState title="No files in this collection yet." /> : null}
      {files !== undefined && files.length > 0 ? (
        <div className="table-wrap">
          <table className="table">
            <caption className="sr-only">Files of {collection}</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Version</th>
                <th scope="col">Size</th>
                <th scope="col">Updated</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {files.map((f) => (
                <tr key={f.name} data-file={f.name}>
                  <td>
                    <button type="button" className="link-button" onClick={() => void openFile(f.name)}>
                      {f.name}
                    </button>
                  </td>
                  <td>{f.current_version}</td>
                  <td>{size(f.size_bytes)}</td>
                  <td>{new Date(f.updated_at).toLocaleString()}</td>
                  <td className="row-actions">
                    <a
                      className="btn btn-secondary btn-small"
                      href={download(f.name)}
                      download={f.name}
                      aria-label={`Download ${f.name}`}
                    >
                      Download
                    </a>
                    <Button
                      kind="danger"
                      className="btn-small"
                      onClick={() => void remove(f.name)}
                      aria-label={`Delete ${f.name}`}
                    >
                      Delete
                    </Button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {open !== null && (
        <section className="versions" aria-labelledby="versions-title">
          <h3 id="versions-title">Versions of {open.name}</h3>
          <div className="table-wrap">
            <table className="table">
              <caption className="sr-only">Versions of {open.name}</caption>
              <thead>
                <tr>
                  <th scope="col">Version</th>
                  <th scope="col">Size</th>
                  <th scope="col">Type</th>
                  <th scope="col">SHA-256</th>
                  <th scope="col">Uploaded</th>
                  <th scope="col">
                    <span className="sr-only">Download</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {open.versions
                  .slice()
                  .sort((a, b) => b.version - a.version)
                  .map((v) => (
                    <tr key={v.version} data-version={v.version}>
                      <td>{v.version}</td>
                      <td>{size(v.size_bytes)}</td>
                      <td>{v.content_type}</td>
                      <td>
                        <code title={v.hash_sha256}>{v.hash_sha256.slice(0, 12)}</code>
                      </td>
                      <td>{new Date(v.created_at).toLocaleString()}</td>
                      <td>
                        <a
                          className="btn btn-secondary btn-small"
                          href={download(open.name, v.version)}
                          download={`${String(v.version)}-${open.name}`}
                          aria-label={`Download version ${String(v.version)}`}
                        >
                          Download
                        </a>
                      </td>
                    </tr>
                  ))}
              </tbody>
            </table>
          </div>
        </section>
      )}
    </section>
  )
}

function size(n: number): string {
  if (n < 1024) return `${String(n)} B`
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`
  return `${(n / 1024 / 1024).toFixed(1)} MB`
}
