import { useState } from 'react'
import { api } from '../../api/client.ts'
import type { ResponseOf } from '../../api/ops.ts'
import { Button, ErrorBanner, Page, useAction } from '../../ui/index.ts'
import { DocumentInput, Plan, Problems, problemsOf } from './Plan.tsx'

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
  const { doing, error, run } = useAction()
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
      <DocumentInput
        fileLabel="Load a file"
        accept=".yaml,.yml,.json,text/yaml"
        label="Config document (YAML)"
        rows={16}
        value={text}
        onChange={edit}
      />
      <div className="page-actions">
        <Button
          busy={doing === 'validate'}
          disabled={text.trim() === ''}
          onClick={() =>
            void run(async () => {
              setValidation(await api<Validation>('POST', '/config/validate', { body: { config: text } }))
            }, 'validate')
          }
        >
          Validate
        </Button>
        <Button
          busy={doing === 'preview'}
          disabled={text.trim() === ''}
          onClick={() =>
            void run(async () => {
              setPlan(undefined)
              const result = await api<ApplyResult>('POST', '/config/apply', { body: { config: text, dryRun: true } })
              setPlan({ result, dryRun: true })
              setPreviewed(text)
            }, 'preview')
          }
        >
          Preview
        </Button>
        <Button
          kind="primary"
          busy={doing === 'apply'}
          disabled={previewed !== text || text.trim() === ''}
          title={previewed === text ? undefined : 'Preview the plan first'}
          onClick={() =>
            void run(async () => {
              const result = await api<ApplyResult>('POST', '/config/apply', { body: { config: text } })
              setPlan({ result, dryRun: false })
              setPreviewed(undefined)
            }, 'apply')
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
