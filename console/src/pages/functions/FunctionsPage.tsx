import { useCallback, useEffect, useState } from 'react'
import { api } from '../../api/client.ts'
import { describe } from '../work/describe.ts'
import { useSearchParam } from '../work/location.ts'
import { FunctionEditor, type FunctionRecord } from './FunctionEditor.tsx'
import { History } from './History.tsx'
import { RunPanel } from './RunPanel.tsx'
import { addRun, readRuns, type RunRecord } from './run-history.ts'

/*
 * Functions: the list, and one function opened (`?fn=<ns>/<name>`, `?fn=new`): its code in the
 * editor, its settings, Run with a form from its input_schema, and its execution history.
 */
export default function FunctionsPage() {
  const [open, setOpen] = useSearchParam('fn')
  const [list, setList] = useState<FunctionRecord[] | null>(null)
  const [error, setError] = useState<string | null>(null)

  const load = useCallback(async () => {
    try {
      setList(await api<FunctionRecord[]>('GET', '/functions', { query: { limit: 1000 } }))
    } catch (err) {
      setError(describe(err))
    }
  }, [])
  useEffect(() => {
    void load()
  }, [load])

  if (open !== null) return <FunctionDetail key={open} fnRef={open} onClose={() => setOpen(null)} onSaved={(ref) => (void load(), setOpen(ref))} />
  return (
    <div className="work-page">
      <header className="page-head">
        <h1>Functions</h1>
        <button type="button" className="btn btn-primary" onClick={() => setOpen('new')}>
          New function
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
        <p className="empty">No functions yet. Create one, write its handler in Python and run it.</p>
      ) : (
        <table className="table">
          <caption className="visually-hidden">Functions</caption>
          <thead>
            <tr>
              <th scope="col">Function</th>
              <th scope="col">Description</th>
              <th scope="col">Approval</th>
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {list.map((f) => {
              const ref = `${f.namespace}/${f.name}`
              return (
                <tr key={ref}>
                  <td>
                    <a
                      href={`?fn=${encodeURIComponent(ref)}`}
                      onClick={(e) => {
                        e.preventDefault()
                        setOpen(ref)
                      }}
                    >
                      {ref}
                    </a>
                  </td>
                  <td>{f.description}</td>
                  <td>{f.requires_approval === true ? 'required' : ''}</td>
                  <td>{f.updated_at === undefined ? '' : new Date(f.updated_at).toLocaleString()}</td>
                </tr>
              )
            })}
          </tbody>
        </table>
      )}
    </div>
  )
}

function FunctionDetail({ fnRef, onClose, onSaved }: { fnRef: string; onClose: () => void; onSaved: (ref: string) => void }) {
  const isNew = fnRef === 'new'
  const [record, setRecord] = useState<FunctionRecord | null>(isNew ? NEW_FUNCTION : null)
  const [error, setError] = useState<string | null>(null)
  const [runs, setRuns] = useState<RunRecord[]>(() => (isNew ? [] : readRuns(fnRef)))
  useEffect(() => {
    if (isNew) return
    api<FunctionRecord>('GET', `/functions/${fnRef}`).then(setRecord, (err) => setError(describe(err)))
  }, [fnRef, isNew])
  return (
    <div className="work-page">
      <header className="page-head">
        <h1>{isNew ? 'New function' : fnRef}</h1>
        <button type="button" className="btn" onClick={onClose}>
          All functions
        </button>
      </header>
      {error !== null && (
        <div className="banner banner-error" role="alert">
          {error}
        </div>
      )}
      {record !== null && (
        <div className="fn-layout">
          <FunctionEditor record={record} isNew={isNew} onSaved={(r) => (setRecord(r), onSaved(`${r.namespace}/${r.name}`))} />
          {!isNew && (
            <div className="fn-side">
              <RunPanel fn={fnRef} schema={record.input_schema} onRun={(r) => setRuns(addRun(fnRef, r))} />
              <History fn={fnRef} runs={runs} />
            </div>
          )}
        </div>
      )}
    </div>
  )
}

const NEW_FUNCTION: FunctionRecord = {
  namespace: 'default',
  name: '',
  description: '',
  code: 'def handler(input, context):\n    return {"echo": input}\n',
  entrypoint: 'handler',
  input_schema: {},
  requires_approval: false,
  timeout: null,
}
