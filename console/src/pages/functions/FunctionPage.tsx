import { useState } from 'react'
import { api } from '../../api/client.ts'
import { Link } from '../../app/link.tsx'
import type { PageProps } from '../../app/pages.ts'
import { navigate } from '../../app/router.ts'
import { ErrorBanner, Page, Spinner, useAsync } from '../../ui/index.ts'
import type { FunctionRecord } from '../work/types.ts'
import { FunctionEditor } from './FunctionEditor.tsx'
import { History } from './History.tsx'
import { RunPanel } from './RunPanel.tsx'
import { addRun, readRuns, type RunRecord } from './run-history.ts'

/*
 * One function (`/functions/<ns>/<name>`, `/functions/new`): its code in the editor and its
 * settings, Run with a form from its input_schema, and its execution history.
 */
export default function FunctionPage({ params }: PageProps) {
  const ns = params['namespace']
  const name = params['name']
  const isNew = ns === undefined || name === undefined
  const ref = isNew ? '' : `${ns}/${name}`
  const { data, error, loading, reload } = useAsync(
    (signal) => (isNew ? Promise.resolve(undefined) : api<FunctionRecord>('GET', `/functions/${ref}`, { signal })),
    [ref],
  )
  const [runs, setRuns] = useState<RunRecord[]>(() => (isNew ? [] : readRuns(ref)))
  return (
    <Page
      title={isNew ? 'New function' : ref}
      actions={
        <Link className="btn btn-secondary" href="/functions">
          All functions
        </Link>
      }
    >
      <ErrorBanner error={error} />
      {loading && !isNew ? <Spinner /> : null}
      {isNew ? (
        <FunctionEditor record={null} onSaved={(r) => navigate(`/functions/${r.namespace}/${r.name}`)} />
      ) : data === undefined ? null : (
        <div className="fn-layout">
          <FunctionEditor key={data.version} record={data} onSaved={reload} />
          <div className="fn-side">
            <RunPanel fn={ref} schema={data.input_schema} onRun={(r) => setRuns(addRun(ref, r))} />
            <History fn={ref} runs={runs} />
          </div>
        </div>
      )}
    </Page>
  )
}
