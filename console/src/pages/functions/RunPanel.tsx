import { useState, type FormEvent } from 'react'
import { api, ApiError } from '../../api/client.ts'
import type { JsonSchema } from '../../api/openapi.ts'
import { Button, ErrorBanner, Field, SchemaForm, type FormValue } from '../../ui/index.ts'
import { JsonView } from '../work/JsonView.tsx'
import type { ExecuteResult } from '../work/types.ts'
import type { RunRecord } from './run-history.ts'

/*
 * Run: the manual trigger. A form from the function's input_schema (the shell's SchemaForm), or
 * one JSON field when the schema names no properties; then POST /functions/{ns}/{name}/execute
 * and its answer — status, result, error and what the function printed.
 */
export function RunPanel({
  fn,
  schema,
  onRun,
}: {
  fn: string
  schema: Record<string, unknown>
  onRun: (r: RunRecord) => void
}) {
  const form = schema as JsonSchema
  const hasFields = form.properties !== undefined && Object.keys(form.properties).length > 0
  const [value, setValue] = useState<FormValue>({})
  const [raw, setRaw] = useState('{}')
  const [running, setRunning] = useState(false)
  const [last, setLast] = useState<RunRecord | null>(null)
  const [error, setError] = useState<unknown>(undefined)

  const submit = async (e: FormEvent) => {
    e.preventDefault()
    let input: unknown = value
    if (!hasFields) {
      try {
        input = JSON.parse(raw)
      } catch {
        setError(new Error('The input is not valid JSON.'))
        return
      }
    }
    setError(undefined)
    setRunning(true)
    try {
      const r = await api<ExecuteResult>('POST', `/functions/${fn}/execute`, { runtime: true, body: { input } })
      const rec: RunRecord = {
        execution_id: r.execution_id,
        at: new Date().toISOString(),
        status: r.status,
        input,
        result: r.result,
        error: r.error,
        ...(r.output !== undefined ? { output: r.output } : {}),
        ...(r.duration_ms !== undefined ? { duration_ms: r.duration_ms } : {}),
        trigger: 'api',
      }
      setLast(rec)
      onRun(rec)
    } catch (err) {
      setError(err)
    } finally {
      setRunning(false)
    }
  }

  return (
    <section className="panel" aria-labelledby="run-title">
      <h2 id="run-title">Run</h2>
      <form onSubmit={(e) => void submit(e)}>
        {hasFields ? (
          <SchemaForm
            schema={form}
            value={value}
            onChange={setValue}
            error={error instanceof ApiError ? error : undefined}
            idPrefix="run"
          />
        ) : (
          <Field label="Input (JSON)">
            {(c) => <textarea {...c} className="mono" rows={4} value={raw} onChange={(e) => setRaw(e.target.value)} />}
          </Field>
        )}
        <div className="form-actions">
          <Button kind="primary" type="submit" busy={running}>
            {running ? 'Running…' : 'Run'}
          </Button>
        </div>
      </form>
      <ErrorBanner error={error} />
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
      {run.error !== null && run.error !== '' && <pre className="pre run-error">{run.error}</pre>}
      {run.result !== undefined && run.result !== null && (
        <>
          <h3>Result</h3>
          <JsonView value={run.result} label="Result" />
        </>
      )}
      {run.output !== undefined && run.output !== '' && (
        <>
          <h3>Output</h3>
          <pre className="pre run-output" aria-label="Output" tabIndex={0}>
            {run.output}
          </pre>
        </>
      )}
    </div>
  )
}
