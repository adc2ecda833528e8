import { useMemo, useState, type FormEvent } from 'react'
import { describe } from '../work/describe.ts'
import { runtime } from '../work/runtime.ts'
import { JsonView } from '../work/JsonView.tsx'
import { fieldsOf, inputOf } from './schema-form.ts'
import type { RunRecord } from './run-history.ts'

/*
 * Run: the manual trigger. A form from the function's input_schema (or one JSON field), then
 * POST /functions/{ns}/{name}/execute and its answer — status, result, error, printed output.
 */
interface ExecuteResult {
  status: 'success' | 'error' | 'timeout'
  execution_id: string
  result: unknown
  error: string | null
  output?: string
  duration_ms?: number
}

export function RunPanel({ fn, schema, onRun }: { fn: string; schema: unknown; onRun: (r: RunRecord) => void }) {
  const fields = useMemo(() => fieldsOf(schema), [schema])
  const [values, setValues] = useState<Record<string, string | boolean>>({})
  const [raw, setRaw] = useState('{}')
  const [errors, setErrors] = useState<Record<string, string>>({})
  const [running, setRunning] = useState(false)
  const [last, setLast] = useState<RunRecord | null>(null)
  const [failure, setFailure] = useState<string | null>(null)

  const submit = async (e: FormEvent) => {
    e.preventDefault()
    let input: unknown
    if (fields === null) {
      try {
        input = JSON.parse(raw)
      } catch {
        setErrors({ _raw: 'not valid JSON' })
        return
      }
    } else {
      const read = inputOf(fields, values)
      if (Object.keys(read.errors).length > 0) {
        setErrors(read.errors)
        return
      }
      input = read.input
    }
    setErrors({})
    setFailure(null)
    setRunning(true)
    const [ns, name] = fn.split('/') as [string, string]
    try {
      const r = await runtime<ExecuteResult>('POST', `/functions/${ns}/${name}/execute`, { body: { input } })
      const rec: RunRecord = {
        execution_id: r.execution_id,
        at: new Date().toISOString(),
        status: r.status,
        input,
        result: r.result,
        error: r.error,
        ...(r.output !== undefined ? { output: r.output } : {}),
        ...(r.duration_ms !== undefined ? { duration_ms: r.duration_ms } : {}),
      }
      setLast(rec)
      onRun(rec)
    } catch (err) {
      setFailure(describe(err))
    } finally {
      setRunning(false)
    }
  }

  return (
    <section className="panel" aria-labelledby="run-title">
      <h3 id="run-title">Run</h3>
      <form onSubmit={submit} className="form">
        {fields === null ? (
          <div className="field">
            <label htmlFor="run-input">Input (JSON)</label>
            <textarea id="run-input" rows={4} value={raw} onChange={(e) => setRaw(e.target.value)} aria-invalid={errors['_raw'] !== undefined} />
            {errors['_raw'] !== undefined && <span className="field-error">{errors['_raw']}</span>}
          </div>
        ) : (
          fields.map((f) => {
            const id = `run-${f.name}`
            const v = values[f.name] ?? f.initial
            const set = (x: string | boolean) => setValues((old) => ({ ...old, [f.name]: x }))
            return (
              <div className="field" key={f.name}>
                <label htmlFor={id}>
                  {f.label}
                  {f.required && <span aria-hidden="true"> *</span>}
                </label>
                {f.kind === 'boolean' ? (
                  <input id={id} type="checkbox" checked={v === true} onChange={(e) => set(e.target.checked)} />
                ) : f.kind === 'enum' ? (
                  <select id={id} value={String(v)} onChange={(e) => set(e.target.value)} required={f.required}>
                    {!f.required && <option value="">—</option>}
                    {(f.options ?? []).map((o) => (
                      <option key={o} value={o}>
                        {o}
                      </option>
                    ))}
                  </select>
                ) : f.kind === 'json' ? (
                  <textarea id={id} rows={3} value={String(v)} onChange={(e) => set(e.target.value)} aria-invalid={errors[f.name] !== undefined} />
                ) : (
                  <input
                    id={id}
                    type={f.kind === 'string' ? 'text' : 'number'}
                    step={f.kind === 'integer' ? 1 : 'any'}
                    value={String(v)}
                    onChange={(e) => set(e.target.value)}
                    required={f.required}
                    aria-invalid={errors[f.name] !== undefined}
                  />
                )}
                {f.description !== undefined && <span className="field-help">{f.description}</span>}
                {errors[f.name] !== undefined && <span className="field-error">{errors[f.name]}</span>}
              </div>
            )
          })
        )}
        <div className="actions">
          <button type="submit" className="btn btn-primary" disabled={running}>
            {running ? 'Running…' : 'Run'}
          </button>
        </div>
      </form>
      {failure !== null && (
        <div className="banner banner-error" role="alert">
          {failure}
        </div>
      )}
      {last !== null && <RunResult run={last} />}
    </section>
  )
}

export function RunResult({ run }: { run: RunRecord }) {
  return (
    <div className="run-result" data-status={run.status}>
      <p>
        <span className={`badge badge-${run.status}`}>{run.status}</span>{' '}
        {run.duration_ms !== undefined && <span className="muted">{Math.round(run.duration_ms)} ms</span>}{' '}
        <code className="muted">{run.execution_id}</code>
      </p>
      {run.error !== null && run.error !== '' && <pre className="run-error">{run.error}</pre>}
      {run.result !== undefined && run.result !== null && (
        <>
          <h4>Result</h4>
          <JsonView value={run.result} label="Result" />
        </>
      )}
      {run.output !== undefined && run.output !== '' && (
        <>
          <h4>Output</h4>
          <pre className="run-output" aria-label="Output">
            {run.output}
          </pre>
        </>
      )}
    </div>
  )
}
