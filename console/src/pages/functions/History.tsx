import { useEffect, useMemo, useState } from 'react'
import { api } from '../../api/client.ts'
import { useExecutionEvents, type ExecutionEvent } from '../work/execution-events.ts'
import { JsonView } from '../work/JsonView.tsx'
import { RunResult } from './RunPanel.tsx'
import type { RunRecord } from './run-history.ts'

/*
 * A function's executions: its recent ones (GET /executions: the caller's own, an admin's every
 * caller's), the runs started here (with their printed output, which only the execute answer
 * carries), and every state change the events stream reports while the page is open (any
 * trigger: API, schedule, agent).
 */
interface ListedExecution {
  execution_id: string
  function: { namespace: string; name: string }
  kind: string
  trigger_type: string
  status: string
  input_data: unknown
  output_data: unknown
  error: string | null
  created_at: string
  duration_ms: number | null
}

export function History({ fn, runs }: { fn: string; runs: RunRecord[] }) {
  const [ns, name] = fn.split('/') as [string, string]
  const [queue, setQueue] = useState<RunRecord[]>([])
  const [live, setLive] = useState<Map<string, ExecutionEvent>>(new Map())
  const [open, setOpen] = useState<string | null>(null)

  useEffect(() => {
    api<ListedExecution[]>('GET', '/executions', {
      runtime: true,
      query: { kind: 'function', namespace: ns, name, limit: 100 },
    }).then(
      (jobs) =>
        setQueue(
          jobs.map((j) => ({
            execution_id: j.execution_id,
            at: j.created_at,
            status: j.status,
            input: j.input_data,
            result: j.output_data,
            error: j.error,
            ...(j.duration_ms === null ? {} : { duration_ms: j.duration_ms }),
            trigger: j.trigger_type,
          })),
        ),
      () => setQueue([]),
    )
  }, [ns, name])

  useExecutionEvents(`${ns}.${name}.>`, (e) => setLive((m) => new Map(m).set(e.execution_id, e)))

  const rows = useMemo(() => {
    const byId = new Map<string, RunRecord>()
    for (const r of [...queue, ...runs]) byId.set(r.execution_id, { ...byId.get(r.execution_id), ...r })
    for (const e of live.values()) {
      const had = byId.get(e.execution_id)
      byId.set(e.execution_id, {
        execution_id: e.execution_id,
        at: had?.at ?? e.created_at,
        input: had?.input,
        ...had,
        status: had !== undefined && had.status === 'success' ? had.status : e.status,
        result: had?.result ?? e.result,
        error: had?.error ?? e.error,
        ...(e.duration_ms !== null ? { duration_ms: e.duration_ms } : {}),
      })
    }
    return [...byId.values()].sort((a, b) => b.at.localeCompare(a.at))
  }, [queue, runs, live])

  return (
    <section className="panel" aria-labelledby="history-title">
      <h3 id="history-title">Executions</h3>
      {rows.length === 0 ? (
        <p className="empty">No executions seen yet.</p>
      ) : (
        <table className="table history">
          <caption className="visually-hidden">Executions of {fn}</caption>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Status</th>
              <th scope="col">Duration</th>
              <th scope="col">
                <span className="visually-hidden">Details</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <HistoryRow
                key={r.execution_id}
                run={r}
                open={open === r.execution_id}
                onToggle={() => setOpen(open === r.execution_id ? null : r.execution_id)}
              />
            ))}
          </tbody>
        </table>
      )}
    </section>
  )
}

function HistoryRow({ run, open, onToggle }: { run: RunRecord; open: boolean; onToggle: () => void }) {
  return (
    <>
      <tr data-execution={run.execution_id}>
        <td>{new Date(run.at).toLocaleString()}</td>
        <td>
          <span className={`badge badge-${run.status}`}>{run.status}</span>
        </td>
        <td>{run.duration_ms === undefined ? '' : `${Math.round(run.duration_ms)} ms`}</td>
        <td>
          <button type="button" className="btn btn-small" aria-expanded={open} onClick={onToggle}>
            {open ? 'Hide' : 'Show'}
          </button>
        </td>
      </tr>
      {open && (
        <tr>
          <td colSpan={4}>
            {run.input !== undefined && (
              <>
                <h4>Input</h4>
                <JsonView value={run.input} label="Input" />
              </>
            )}
            <RunResult run={run} />
          </td>
        </tr>
      )}
    </>
  )
}
