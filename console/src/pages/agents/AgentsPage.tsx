import { useCallback, useEffect, useState } from 'react'
import { api } from '../../api/client.ts'
import { describe } from '../work/describe.ts'
import { useSearchParam } from '../work/location.ts'
import { AgentEditor, type AgentRecord } from './AgentEditor.tsx'

/* Agents: the list, and one agent opened for editing (`?agent=<ns>/<name>`, `?agent=new`). */
export default function AgentsPage() {
  const [open, setOpen] = useSearchParam('agent')
  const [list, setList] = useState<AgentRecord[] | null>(null)
  const [error, setError] = useState<string | null>(null)
  const load = useCallback(async () => {
    try {
      setList(await api<AgentRecord[]>('GET', '/agents', { query: { limit: 1000 } }))
    } catch (err) {
      setError(describe(err))
    }
  }, [])
  useEffect(() => {
    void load()
  }, [load])

  if (open !== null)
    return (
      <AgentEditor
        key={open}
        agentRef={open}
        onClose={() => setOpen(null)}
        onSaved={(ref) => {
          void load()
          setOpen(ref)
        }}
        onDeleted={() => {
          void load()
          setOpen(null)
        }}
      />
    )
  return (
    <div className="work-page">
      <header className="page-head">
        <h1>Agents</h1>
        <button type="button" className="btn btn-primary" onClick={() => setOpen('new')}>
          New agent
        </button>
      </header>
      {error !== null && (
        <div className="banner banner-error" role="alert">
          {error}
        </div>
      )}
      {list === null ? (
        <p className="muted">Loading…</p>
      ) : list.length === 0 ? (
        <p className="empty">No agents yet.</p>
      ) : (
        <table className="table">
          <caption className="visually-hidden">Agents</caption>
          <thead>
            <tr>
              <th scope="col">Agent</th>
              <th scope="col">Description</th>
              <th scope="col">Tools</th>
              <th scope="col">
                <span className="visually-hidden">Chat</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.map((a) => {
              const ref = `${a.namespace}/${a.name}`
              return (
                <tr key={ref}>
                  <td>
                    <a
                      href={`?agent=${encodeURIComponent(ref)}`}
                      onClick={(e) => {
                        e.preventDefault()
                        setOpen(ref)
                      }}
                    >
                      {ref}
                    </a>
                  </td>
                  <td>{a.description}</td>
                  <td>{[...a.enabled_functions, ...a.enabled_agents.map((x) => `agent ${x}`)].join(', ')}</td>
                  <td>
                    <a href={`chat?agent=${encodeURIComponent(ref)}`}>Chat</a>
                  </td>
                </tr>
              )
            })}
          </tbody>
        </table>
      )}
    </div>
  )
}
