import { useState } from 'react'
import { api } from '../../api/client.ts'
import type { ResponseOf } from '../../api/ops.ts'
import { Button, ErrorBanner, Field, Page } from '../../ui/index.ts'
import { Plan, Problems, problemsOf, readText } from './Plan.tsx'

type ApplyResult = ResponseOf<'config.apply'>
type Validation = ResponseOf<'config.validate'>

/*
 * Declarative config (docs/gitops.md): paste or upload a document, validate it, preview the plan
 * (a dry run) and apply it; export the platform as a document. An apply is only offered after a
 * preview of the same text, so what is applied is what was looked at.
 */
export default function ConfigPage() {
  const [text, setText] = useState('')
  const [previewed, setPreviewed] = useState<string | undefined>(undefined)
  const [validation, setValidation] = useState<Validation | undefined>(undefined)
  const [plan, setPlan] = useState<{ result: ApplyResult; dryRun: boolean } | undefined>(undefined)
  const [busy, setBusy] = useState<string | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)

  const run = async (what: string, fn: () => Promise<void>) => {
    setBusy(what)
    setError(undefined)
    try {
      await fn()
    } catch (err) {
      setError(err)
    } finally {
      setBusy(undefined)
    }
  }
  const edit = (next: string) => {
    setText(next)
    setPreviewed(undefined)
    setPlan(undefined)
    setValidation(undefined)
  }
  return (
    <Page
      title="Config"
      actions={
        <a className="btn btn-secondary" href="/api/v1/config/export" download="platform.yaml">
          Export
        </a>
      }
    >
      <p className="muted">
        A config document describes resources by name; applying it creates, updates and (with prune) deletes them.
        Preview first: the plan shows what would change.
      </p>
      <Field label="Load a file">
        {(c) => (
          <input
            {...c}
            type="file"
            accept=".yaml,.yml,.json,text/yaml"
            onChange={(e) => {
              const f = e.target.files?.[0]
              if (f !== undefined) void readText(f).then(edit)
            }}
          />
        )}
      </Field>
      <Field label="Config document (YAML)" required>
        {(c) => (
          <textarea
            {...c}
            className="mono"
            rows={16}
            value={text}
            spellCheck={false}
            onChange={(e) => edit(e.target.value)}
          />
        )}
      </Field>
      <div className="page-actions">
        <Button
          busy={busy === 'validate'}
          disabled={text.trim() === ''}
          onClick={() =>
            void run('validate', async () => {
              setValidation(await api<Validation>('POST', '/config/validate', { body: { config: text } }))
            })
          }
        >
          Validate
        </Button>
        <Button
          busy={busy === 'preview'}
          disabled={text.trim() === ''}
          onClick={() =>
            void run('preview', async () => {
              setPlan(undefined)
              const result = await api<ApplyResult>('POST', '/config/apply', { body: { config: text, dryRun: true } })
              setPlan({ result, dryRun: true })
              setPreviewed(text)
            })
          }
        >
          Preview
        </Button>
        <Button
          kind="primary"
          busy={busy === 'apply'}
          disabled={previewed !== text || text.trim() === ''}
          title={previewed === text ? undefined : 'Preview the plan first'}
          onClick={() =>
            void run('apply', async () => {
              const result = await api<ApplyResult>('POST', '/config/apply', { body: { config: text } })
              setPlan({ result, dryRun: false })
              setPreviewed(undefined)
            })
          }
        >
          Apply
        </Button>
      </div>
      <ErrorBanner error={error} />
      <Problems errors={problemsOf(error)} />
      {validation === undefined ? null : validation.valid ? (
        <p className="banner banner-ok" role="status">
          The document is valid.
        </p>
      ) : (
        <Problems errors={validation.errors} />
      )}
      {plan === undefined ? null : <Plan result={plan.result} dryRun={plan.dryRun} />}
    </Page>
  )
}
