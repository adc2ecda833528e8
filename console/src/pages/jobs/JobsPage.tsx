import { useCallback, useEffect, useState, type FormEvent } from 'react'
import { api, ApiError } from '../../api/client.ts'
import { Button, EmptyState, ErrorBanner, Page } from '../../ui/index.ts'
import { useExecutionEvents, type ExecutionEvent } from '../work/execution-events.ts'
import { JsonView } from '../work/JsonView.tsx'
import type { Execution, QueueStats } from '../work/types.ts'

/*
 * Jobs and executions with their live status: the recent ones from GET /executions (a user's own;
 * an admin's every caller's), and every execution event the caller may see over the events stream
 * updates its row (or adds it on top). An admin also gets the queue's counts
 * (GET /api/v1/queue/stats) and may cancel a job. Anyone may look an execution up by id
 * (GET /executions/{id}).
 */
interface Row {
  execution_id: string
  kind: string
  pool: string
  namespace: string
  name: string
  trigger_type: string
  status: string
  attempts: number
  error: string | null
  created_at: string
  duration_ms: number | null
  input?: unknown
  output?: unknown
}
const STATUSES = ['', 'scheduled', 'queued', 'running', 'completed', 'failed', 'cancelled']
const ACTIVE = new Set(['scheduled', 'queued', 'running'])

const rowOf = (j: Execution): Row => ({
  execution_id: j.execution_id,
  kind: j.kind,
  pool: j.pool,
  namespace: j.function.namespace,
  name: j.function.name,
  trigger_type: j.trigger_type,
  status: j.status,
  attempts: j.attempts,
  error: j.error,
  created_at: j.created_at,
  duration_ms: j.duration_ms,
  input: j.input_data,
  output: j.output_data,
})

export default function JobsPage() {
  const [rows, setRows] = useState<Row[]>([])
  const [stats, setStats] = useState<QueueStats | null>(null)
  const [admin, setAdmin] = useState<boolean | null>(null)
  const [status, setStatus] = useState('')
  const [error, setError] = useState<unknown>(undefined)
  const [open, setOpen] = useState<string | null>(null)
  const [lookup, setLookup] = useState('')

  const load = useCallback(async () => {
    try {
      const [jobs, s] = await Promise.all([
        api<Execution[]>('GET', '/executions', {
          runtime: true,
          query: { limit: 200, ...(status === '' ? {} : { status }) },
        }),
        api<QueueStats>('GET', '/queue/stats').catch((err: unknown) => {
          if (err instanceof ApiError && err.status === 403) return null
          throw err
        }),
      ])
      setAdmin(s !== null)
      setStats(s)
      setRows(jobs.map(rowOf))
    } catch (err) {
      setError(err)
    }
  }, [status])
  useEffect(() => {
    void load()
  }, [load])

  useExecutionEvents('>', (e: ExecutionEvent) =>
    setRows((old) => {
      const i = old.findIndex((r) => r.execution_id === e.execution_id)
      const had = i === -1 ? undefined : (old[i] as Row)
      const row: Row = {
        execution_id: e.execution_id,
        kind: e.kind,
        pool: e.pool,
        namespace: e.namespace,
        name: e.name,
        trigger_type: e.trigger_type,
        status: e.status,
        attempts: e.attempt,
        error: e.error,
        created_at: e.created_at,
        duration_ms: e.duration_ms,
        ...(had?.input !== undefined ? { input: had.input } : {}),
        ...(e.result !== undefined ? { output: e.result } : had?.output !== undefined ? { output: had.output } : {}),
      }
      if (status !== '' && row.status !== status) return i === -1 ? old : old.filter((_, j) => j !== i)
      return i === -1 ? [row, ...old].slice(0, 500) : old.map((r, j) => (j === i ? row : r))
    }),
  )

  const find = async (e: FormEvent) => {
    e.preventDefault()
    const id = lookup.trim()
    if (id === '') return
    try {
      const r = rowOf(await api<Execution>('GET', `/executions/${encodeURIComponent(id)}`, { runtime: true }))
      setRows((old) => [r, ...old.filter((x) => x.execution_id !== r.execution_id)])
      setOpen(r.execution_id)
      setError(undefined)
    } catch (err) {
      setError(err)
    }
  }

  const cancel = async (id: string) => {
    try {
      await api('POST', `/queue/jobs/${id}/cancel`)
      setRows((old) => old.map((r) => (r.execution_id === id ? { ...r, status: 'cancelled' } : r)))
    } catch (err) {
      setError(err)
    }
  }

  return (
    <Page title="Jobs" actions={<span className="live-dot">live</span>}>
      {stats !== null && (
        <dl className="stats" aria-label="Queue">
          {(['functions', 'agents', 'subagents'] as const).map((q) => (
            <div key={q}>
              <dt>{q}</dt>
              <dd>
                {stats.queues[q].pending} pending, {stats.queues[q].executing} running
              </dd>
            </div>
          ))}
          <div>
            <dt>last 24 h</dt>
            <dd>
              {stats.jobs['completed'] ?? 0} completed, {stats.jobs['failed'] ?? 0} failed
            </dd>
          </div>
          <div>
            <dt>dead letters</dt>
            <dd>{stats.dlq.size}</dd>
          </div>
        </dl>
      )}
      <div className="toolbar">
        {admin !== null && (
          <div className="field field-inline">
            <label htmlFor="jobs-status">Status</label>
            <select id="jobs-status" value={status} onChange={(e) => setStatus(e.target.value)}>
              {STATUSES.map((s) => (
                <option key={s} value={s}>
                  {s === '' ? 'any' : s}
                </option>
              ))}
            </select>
          </div>
        )}
        <form className="field-inline" onSubmit={find}>
          <label htmlFor="jobs-lookup">Execution id</label>
          <input id="jobs-lookup" value={lookup} onChange={(e) => setLookup(e.target.value)} placeholder="00000000-…" />
          <Button type="submit">Look up</Button>
        </form>
      </div>
      {admin === false && <p className="muted">Your own executions, updated as they change state.</p>}
      <ErrorBanner error={error} />
      {rows.length === 0 ? (
        <EmptyState title="No executions to show yet." />
      ) : (
        <div className="table-wrap">
          <table className="table jobs">
            <caption className="sr-only">Executions</caption>
            <thead>
              <tr>
                <th scope="col">Created</th>
                <th scope="col">What</th>
                <th scope="col">Trigger</th>
                <th scope="col">Status</th>
                <th scope="col">Duration</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <JobRow
                  key={r.execution_id}
                  row={r}
                  open={open === r.execution_id}
                  onToggle={() => setOpen(open === r.execution_id ? null : r.execution_id)}
                  onCancel={admin === true && ACTIVE.has(r.status) ? () => void cancel(r.execution_id) : undefined}
                />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Page>
  )
}

function JobRow({
  row,
  open,
  onToggle,
  onCancel,
}: {
  row: Row
  open: boolean
  onToggle: () => void
  onCancel: (() => void) | undefined
}) {
  return (
    <>
      <tr data-execution={row.execution_id} data-status={row.status}>
        <td>{new Date(row.created_at).toLocaleString()}</td>
        <td>
          <span className="muted">{row.kind}</span> {row.namespace}/{row.name}
        </td>
        <td>{row.trigger_type}</td>
        <td>
          <span className={`badge badge-${row.status}`} aria-live="polite">
            {row.status}
          </span>
          {row.attempts > 1 && <span className="muted"> (attempt {row.attempts})</span>}
        </td>
        <td>{row.duration_ms === null ? '' : `${row.duration_ms} ms`}</td>
        <td className="row-actions">
          <Button className="btn-small" aria-expanded={open} onClick={onToggle}>
            {open ? 'Hide' : 'Details'}
          </Button>
          {onCancel !== undefined && (
            <Button kind="danger" className="btn-small" onClick={onCancel}>
              Cancel
            </Button>
          )}
        </td>
      </tr>
      {open && (
        <tr>
          <td colSpan={6}>
            <p>
              <code>{row.execution_id}</code> <span className="muted">pool {row.pool}</span>
            </p>
            {row.error !== null && <pre className="pre run-error">{row.error}</pre>}
            {row.input !== undefined && (
              <>
                <h4>Input</h4>
                <JsonView value={row.input} label="Input" />
              </>
            )}
            {row.output !== undefined && row.output !== null && (
              <>
                <h4>Output</h4>
                <JsonView value={row.output} label="Output" />
              </>
            )}
          </td>
        </tr>
      )}
    </>
  )
}
