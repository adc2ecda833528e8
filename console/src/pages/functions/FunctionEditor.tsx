import { useState, type FormEvent } from 'react'
import { api } from '../../api/client.ts'
import { describe } from '../work/describe.ts'
import { CodeEditor } from './CodeEditor.tsx'

/* A function's code (CodeMirror, Python) and settings; Save creates (POST) or updates (PUT) it. */
export interface FunctionRecord {
  namespace: string
  name: string
  description: string
  code: string
  entrypoint: string
  input_schema: Record<string, unknown>
  requires_approval?: boolean
  timeout: number | null
  updated_at?: string
}

export function FunctionEditor({ record, isNew, onSaved }: { record: FunctionRecord; isNew: boolean; onSaved: (r: FunctionRecord) => void }) {
  const [ns, setNs] = useState(record.namespace)
  const [name, setName] = useState(record.name)
  const [description, setDescription] = useState(record.description)
  const [code, setCode] = useState(record.code)
  const [schema, setSchema] = useState(JSON.stringify(record.input_schema ?? {}, null, 2))
  const [approval, setApproval] = useState(record.requires_approval === true)
  const [timeout, setTimeoutValue] = useState(record.timeout === null ? '' : String(record.timeout))
  const [saving, setSaving] = useState(false)
  const [message, setMessage] = useState<{ tone: 'error' | 'ok'; text: string } | null>(null)

  const save = async (e: FormEvent) => {
    e.preventDefault()
    let input_schema: unknown
    try {
      input_schema = JSON.parse(schema === '' ? '{}' : schema)
    } catch {
      setMessage({ tone: 'error', text: 'The input schema is not valid JSON.' })
      return
    }
    const body = {
      description,
      code,
      input_schema,
      requires_approval: approval,
      timeout: timeout === '' ? null : Number(timeout),
    }
    setSaving(true)
    setMessage(null)
    try {
      const saved = isNew
        ? await api<FunctionRecord>('POST', '/functions', { body: { namespace: ns, name, ...body } })
        : await api<FunctionRecord>('PUT', `/functions/${record.namespace}/${record.name}`, { body })
      setMessage({ tone: 'ok', text: 'Saved.' })
      onSaved(saved)
    } catch (err) {
      setMessage({ tone: 'error', text: describe(err) })
    } finally {
      setSaving(false)
    }
  }

  return (
    <form className="panel form fn-editor" onSubmit={save} aria-label="Function">
      {isNew && (
        <div className="field-row">
          <div className="field">
            <label htmlFor="fn-ns">Namespace</label>
            <input id="fn-ns" value={ns} onChange={(e) => setNs(e.target.value)} required />
          </div>
          <div className="field">
            <label htmlFor="fn-name">Name</label>
            <input id="fn-name" value={name} onChange={(e) => setName(e.target.value)} required />
          </div>
        </div>
      )}
      <div className="field">
        <label htmlFor="fn-description">Description</label>
        <input id="fn-description" value={description} onChange={(e) => setDescription(e.target.value)} />
      </div>
      <div className="field">
        <span className="label" id="fn-code-label">
          Code (Python)
        </span>
        <CodeEditor value={code} onChange={setCode} language="python" label="Code (Python)" />
      </div>
      <div className="field">
        <span className="label">Input schema (JSON Schema)</span>
        <CodeEditor value={schema} onChange={setSchema} language="json" label="Input schema (JSON Schema)" />
      </div>
      <div className="field-row">
        <div className="field">
          <label htmlFor="fn-timeout">Timeout (seconds)</label>
          <input id="fn-timeout" type="number" min={1} value={timeout} onChange={(e) => setTimeoutValue(e.target.value)} placeholder="default" />
        </div>
        <div className="field field-check">
          <input id="fn-approval" type="checkbox" checked={approval} onChange={(e) => setApproval(e.target.checked)} />
          <label htmlFor="fn-approval">Agent calls wait for approval</label>
        </div>
      </div>
      {message !== null && (
        <div className={`banner banner-${message.tone}`} role={message.tone === 'error' ? 'alert' : 'status'}>
          {message.text}
        </div>
      )}
      <div className="actions">
        <button type="submit" className="btn btn-primary" disabled={saving}>
          {saving ? 'Saving…' : 'Save'}
        </button>
      </div>
    </form>
  )
}
