import { useState, type FormEvent } from 'react'
import { api } from '../../api/client.ts'
import { Button, ErrorBanner, Field } from '../../ui/index.ts'
import type { FunctionRecord } from '../work/types.ts'
import { CodeEditor } from './CodeEditor.tsx'

/* A function's code (CodeMirror, Python) and settings; Save creates (POST) or updates (PUT) it. */
const NEW_CODE = 'def handler(input, context):\n    return {"echo": input}\n'

export function FunctionEditor({
  record,
  onSaved,
}: {
  record: FunctionRecord | null
  onSaved: (r: FunctionRecord) => void
}) {
  const [ns, setNs] = useState(record?.namespace ?? 'default')
  const [name, setName] = useState(record?.name ?? '')
  const [description, setDescription] = useState(record?.description ?? '')
  const [code, setCode] = useState(record?.code ?? NEW_CODE)
  const [schema, setSchema] = useState(JSON.stringify(record?.input_schema ?? {}, null, 2))
  const [approval, setApproval] = useState(record?.requires_approval === true)
  const [timeout, setTimeoutValue] = useState(record?.timeout == null ? '' : String(record.timeout))
  const [saving, setSaving] = useState(false)
  const [error, setError] = useState<unknown>(undefined)
  const [saved, setSaved] = useState(false)

  const save = async (e: FormEvent) => {
    e.preventDefault()
    let input_schema: unknown
    try {
      input_schema = JSON.parse(schema.trim() === '' ? '{}' : schema)
    } catch {
      setError(new Error('The input schema is not valid JSON.'))
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
    setError(undefined)
    setSaved(false)
    try {
      const out =
        record === null
          ? await api<FunctionRecord>('POST', '/functions', { body: { namespace: ns, name, ...body } })
          : await api<FunctionRecord>('PUT', `/functions/${record.namespace}/${record.name}`, { body })
      setSaved(true)
      onSaved(out)
    } catch (err) {
      setError(err)
    } finally {
      setSaving(false)
    }
  }

  return (
    <form className="panel fn-editor" onSubmit={(e) => void save(e)} aria-label="Function">
      {record === null && (
        <div className="form-row">
          <Field label="Namespace" required>
            {(c) => <input {...c} value={ns} onChange={(e) => setNs(e.target.value)} />}
          </Field>
          <Field label="Name" required>
            {(c) => <input {...c} value={name} onChange={(e) => setName(e.target.value)} />}
          </Field>
        </div>
      )}
      <Field label="Description">
        {(c) => <input {...c} value={description} onChange={(e) => setDescription(e.target.value)} />}
      </Field>
      <div className="field">
        <span className="field-label">Code (Python)</span>
        <CodeEditor value={code} onChange={setCode} language="python" label="Code (Python)" />
      </div>
      <div className="field">
        <span className="field-label">Input schema (JSON Schema)</span>
        <CodeEditor value={schema} onChange={setSchema} language="json" label="Input schema (JSON Schema)" />
      </div>
      <div className="form-row">
        <Field label="Timeout (seconds)" help="Empty: the platform's FUNCTION_TIMEOUT.">
          {(c) => (
            <input {...c} type="number" min={1} value={timeout} onChange={(e) => setTimeoutValue(e.target.value)} />
          )}
        </Field>
        <Field label="Agent calls wait for approval">
          {(c) => (
            <input
              {...c}
              type="checkbox"
              className="checkbox"
              checked={approval}
              onChange={(e) => setApproval(e.target.checked)}
            />
          )}
        </Field>
      </div>
      <ErrorBanner error={error} />
      {saved ? (
        <p className="muted" role="status">
          Saved.
        </p>
      ) : null}
      <div className="form-actions">
        <Button kind="primary" type="submit" busy={saving}>
          {record === null ? 'Create function' : 'Save'}
        </Button>
      </div>
    </form>
  )
}
