import type { ResponseOf } from '../../api/ops.ts'
import { ApiError } from '../../api/client.ts'
import { Field, Table } from '../../ui/index.ts'

type ApplyResult = ResponseOf<'config.apply'>

/**
 * What an apply (or its dry run) did or would do: the summary, then one row per resource that
 * changes. Unchanged resources are counted, not listed: in a large config they would bury the
 * few that matter.
 */
export function Plan({ result, dryRun }: { result: ApplyResult; dryRun: boolean }) {
  const { created, updated, deleted, unchanged } = result.summary
  const changed = result.changes.filter((c) => c.action !== 'unchanged')
  return (
    <section className="plan" aria-label={dryRun ? 'Plan' : 'Applied'}>
      <p className="plan-summary">
        {dryRun ? 'Would create' : 'Created'} {created}, {dryRun ? 'update' : 'updated'} {updated},{' '}
        {dryRun ? 'delete' : 'deleted'} {deleted}; {unchanged} unchanged.
      </p>
      {changed.length === 0 ? null : (
        <Table
          caption={dryRun ? 'Planned changes' : 'Changes'}
          rows={changed}
          rowKey={(c) => `${c.resourceType}:${c.resourceName}`}
          columns={[
            { key: 'action', label: 'Action', render: (c) => c.action },
            { key: 'type', label: 'Kind', render: (c) => c.resourceType },
            { key: 'name', label: 'Name', render: (c) => <span className="mono">{c.resourceName}</span> },
          ]}
        />
      )}
      {result.warnings.length === 0 ? null : (
        <ul className="plan-warnings">
          {result.warnings.map((w) => (
            <li key={w}>{w}</li>
          ))}
        </ul>
      )}
    </section>
  )
}

/** The problems of a refused document, each with where it is (a path, and a line when known). */
export function Problems({ errors }: { errors: readonly { path: string; message: string; line?: number }[] }) {
  if (errors.length === 0) return null
  return (
    <ul className="problems" aria-label="Problems">
      {errors.map((e, i) => (
        <li key={`${e.path}:${String(i)}`}>
          <span className="mono">
            {e.path === '' ? '(document)' : e.path}
            {e.line === undefined ? '' : ` line ${String(e.line)}`}
          </span>
          : {e.message}
        </li>
      ))}
    </ul>
  )
}

/** The field problems an ApiError carries (a refused apply answers 422 with them), else none. */
export const problemsOf = (err: unknown): { path: string; message: string }[] =>
  err instanceof ApiError ? (err.fields ?? []) : []

/** Reads a chosen file as text (a config or package document). */
export const readText = (file: File): Promise<string> => file.text()

/** A YAML document to paste, or to load from a file (which replaces what is typed). */
export function DocumentInput({
  label,
  fileLabel,
  accept,
  rows,
  value,
  onChange,
}: {
  label: string
  fileLabel: string
  accept: string
  rows: number
  value: string
  onChange: (text: string) => void
}) {
  return (
    <>
      <Field label={fileLabel}>
        {(c) => (
          <input
            {...c}
            type="file"
            accept={accept}
            onChange={(e) => {
              const f = e.target.files?.[0]
              if (f !== undefined) void readText(f).then(onChange)
            }}
          />
        )}
      </Field>
      <Field label={label} required>
        {(c) => (
          <textarea
            {...c}
            className="mono"
            rows={rows}
            value={value}
            spellCheck={false}
            onChange={(e) => onChange(e.target.value)}
          />
        )}
      </Field>
    </>
  )
}
