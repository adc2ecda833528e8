import { useCallback, useEffect, useRef, useState, type FormEvent } from 'react'
import { api } from '../../api/client.ts'
import { describe } from '../work/describe.ts'
import { useSearchParam } from '../work/location.ts'
import { runtime, runtimeUrl } from '../work/runtime.ts'
import { uploadFile } from './upload.ts'

/*
 * Collections and their files: pick a collection (`?collection=<ns>/<name>`), upload files with
 * progress (a file of an existing name becomes its next version), open a file to see every version
 * and download any of them.
 */
interface Collection {
  namespace: string
  name: string
  description?: string
}
interface FileVersion {
  version: number
  size_bytes: number
  hash_sha256: string
  content_type: string
  created_at: string
}
interface FileRecord {
  name: string
  content_type: string
  current_version: number
  size_bytes: number
  visibility: string
  updated_at: string
  versions: FileVersion[]
}

export default function FilesPage() {
  const [current, setCurrent] = useSearchParam('collection')
  const [collections, setCollections] = useState<Collection[] | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [newNs, setNewNs] = useState('default')
  const [newName, setNewName] = useState('')

  const load = useCallback(async () => {
    try {
      setCollections(await api<Collection[]>('GET', '/collections', { query: { limit: 1000 } }))
    } catch (err) {
      setError(describe(err))
    }
  }, [])
  useEffect(() => {
    void load()
  }, [load])

  const create = async (e: FormEvent) => {
    e.preventDefault()
    try {
      await api('POST', '/collections', { body: { namespace: newNs, name: newName } })
      setNewName('')
      await load()
      setCurrent(`${newNs}/${newName}`)
    } catch (err) {
      setError(describe(err))
    }
  }

  return (
    <div className="work-page files-page">
      <header className="page-head">
        <h1>Files</h1>
      </header>
      {error !== null && (
        <div className="banner banner-error" role="alert">
          {error}
        </div>
      )}
      <div className="files-layout">
        <nav className="panel" aria-label="Collections">
          <h2>Collections</h2>
          {collections === null ? (
            <p className="muted">Loading…</p>
          ) : collections.length === 0 ? (
            <p className="empty">No collections yet.</p>
          ) : (
            <ul className="link-list">
              {collections.map((c) => {
                const ref = `${c.namespace}/${c.name}`
                return (
                  <li key={ref}>
                    <button type="button" className={`chat-link ${ref === current ? 'current' : ''}`} aria-current={ref === current ? 'page' : undefined} onClick={() => setCurrent(ref)}>
                      {ref}
                    </button>
                  </li>
                )
              })}
            </ul>
          )}
          <form className="form" onSubmit={create} aria-label="New collection">
            <div className="field-row">
              <div className="field">
                <label htmlFor="coll-ns">Namespace</label>
                <input id="coll-ns" value={newNs} onChange={(e) => setNewNs(e.target.value)} required />
              </div>
              <div className="field">
                <label htmlFor="coll-name">Name</label>
                <input id="coll-name" value={newName} onChange={(e) => setNewName(e.target.value)} required />
              </div>
            </div>
            <button type="submit" className="btn">
              New collection
            </button>
          </form>
        </nav>
        {current === null ? <p className="muted">Pick a collection.</p> : <CollectionFiles key={current} collection={current} />}
      </div>
    </div>
  )
}

function CollectionFiles({ collection }: { collection: string }) {
  const [ns, name] = collection.split('/') as [string, string]
  const [files, setFiles] = useState<FileRecord[] | null>(null)
  const [open, setOpen] = useState<FileRecord | null>(null)
  const [progress, setProgress] = useState<{ name: string; sent: number; total: number } | null>(null)
  const [message, setMessage] = useState<{ tone: 'error' | 'ok'; text: string } | null>(null)
  const input = useRef<HTMLInputElement>(null)

  const load = useCallback(async () => {
    try {
      setFiles(await runtime<FileRecord[]>('GET', `/files/${ns}/${name}`, { query: { limit: 1000 } }))
    } catch (err) {
      setMessage({ tone: 'error', text: describe(err) })
    }
  }, [ns, name])
  useEffect(() => {
    void load()
  }, [load])

  const openFile = async (file: string) => {
    try {
      setOpen(await runtime<FileRecord>('GET', `/files/${ns}/${name}/${encodeURIComponent(file)}/info`))
    } catch (err) {
      setMessage({ tone: 'error', text: describe(err) })
    }
  }

  const upload = async (e: FormEvent) => {
    e.preventDefault()
    const chosen = Array.from(input.current?.files ?? [])
    setMessage(null)
    for (const f of chosen) {
      try {
        setProgress({ name: f.name, sent: 0, total: f.size })
        const saved = await uploadFile(ns, name, f, { onProgress: (sent, total) => setProgress({ name: f.name, sent, total }) })
        setMessage({ tone: 'ok', text: `${saved.name}: version ${String(saved.current_version)} uploaded.` })
        if (open?.name === saved.name) await openFile(saved.name)
      } catch (err) {
        setMessage({ tone: 'error', text: `${f.name}: ${describe(err)}` })
      }
    }
    setProgress(null)
    if (input.current !== null) input.current.value = ''
    await load()
  }

  const remove = async (file: string) => {
    if (!window.confirm(`Delete ${file} and all its versions?`)) return
    try {
      await runtime('DELETE', `/files/${ns}/${name}/${encodeURIComponent(file)}`)
      if (open?.name === file) setOpen(null)
      await load()
    } catch (err) {
      setMessage({ tone: 'error', text: describe(err) })
    }
  }

  const download = (file: string, version?: number) =>
    runtimeUrl(`/files/${ns}/${name}/${encodeURIComponent(file)}`, version === undefined ? {} : { version })

  return (
    <section className="panel files-main" aria-labelledby="files-title">
      <h2 id="files-title">{collection}</h2>
      <form className="upload" onSubmit={upload} aria-label="Upload">
        <label htmlFor="upload-input">Files to upload</label>
        <input id="upload-input" ref={input} type="file" multiple />
        <button type="submit" className="btn btn-primary" disabled={progress !== null}>
          Upload
        </button>
        {progress !== null && (
          <div className="upload-progress">
            <label htmlFor="upload-bar">{progress.name}</label>
            <progress id="upload-bar" max={progress.total || 1} value={progress.sent}>
              {Math.round((100 * progress.sent) / (progress.total || 1))}%
            </progress>
          </div>
        )}
      </form>
      {message !== null && (
        <div className={`banner banner-${message.tone}`} role={message.tone === 'error' ? 'alert' : 'status'}>
          {message.text}
        </div>
      )}
      {files === null ? (
        <p className="muted">Loading…</p>
      ) : files.length === 0 ? (
        <p className="empty">No files in this collection yet.</p>
      ) : (
        <table className="table">
          <caption className="visually-hidden">Files of {collection}</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Version</th>
              <th scope="col">Size</th>
              <th scope="col">Updated</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {files.map((f) => (
              <tr key={f.name} data-file={f.name}>
                <td>
                  <button type="button" className="link" onClick={() => void openFile(f.name)}>
                    {f.name}
                  </button>
                </td>
                <td>{f.current_version}</td>
                <td>{size(f.size_bytes)}</td>
                <td>{new Date(f.updated_at).toLocaleString()}</td>
                <td className="row-actions">
                  <a className="btn btn-small" href={download(f.name)} download={f.name}>
                    Download
                  </a>
                  <button type="button" className="btn btn-small btn-danger" onClick={() => void remove(f.name)} aria-label={`Delete ${f.name}`}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {open !== null && (
        <section className="versions" aria-labelledby="versions-title">
          <h3 id="versions-title">Versions of {open.name}</h3>
          <table className="table">
            <caption className="visually-hidden">Versions of {open.name}</caption>
            <thead>
              <tr>
                <th scope="col">Version</th>
                <th scope="col">Size</th>
                <th scope="col">Type</th>
                <th scope="col">SHA-256</th>
                <th scope="col">Uploaded</th>
                <th scope="col">
                  <span className="visually-hidden">Download</span>
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
                      <a className="btn btn-small" href={download(open.name, v.version)} download={`${String(v.version)}-${open.name}`} aria-label={`Download version ${String(v.version)}`}>
                        Download
                      </a>
                    </td>
                  </tr>
                ))}
            </tbody>
          </table>
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
