import { useState } from 'react'
import { api } from '../../api/client.ts'
import type { ResponseOf } from '../../api/ops.ts'
import { Button, EmptyState, ErrorBanner, Field, Page, Spinner, Table, useAction, useAsync } from '../../ui/index.ts'
import { formatTime } from '../resources/ResourceList.tsx'
import { DocumentInput, Plan, Problems, problemsOf } from './Plan.tsx'

type Installed = ResponseOf<'packages.list'>[number]
type Preview = ResponseOf<'packages.preview'>
type Variable = Preview['variables'][number]
type Values = Record<string, string | boolean | number>

/*
 * Packages (docs/gitops.md#packages): the installed ones, with uninstall; installing one is
 * upload → preview (its variables asked for, the plan shown) → install with those values.
 */
export default function PackagesPage() {
  const list = useAsync((signal) => api<Installed[]>('GET', '/packages', { signal }), [])
  const [source, setSource] = useState('')
  const [preview, setPreview] = useState<Preview | undefined>(undefined)
  const [values, setValues] = useState<Values>({})
  const [done, setDone] = useState<string | undefined>(undefined)
  const action = useAction()
  const { doing: busy, error } = action
  const run = (what: string, fn: () => Promise<void>) => {
    setDone(undefined)
    return action.run(fn, what)
  }
  const load = (text: string) => {
    setSource(text)
    setPreview(undefined)
    setValues({})
  }
  const doPreview = () =>
    run('preview', async () => {
      setPreview(await api<Preview>('POST', '/packages/preview', { body: { source, variables: values } }))
    })
  return (
    <Page title="Packages" actions={<Button onClick={list.reload}>Refresh</Button>}>
      <ErrorBanner error={list.error} />
      {list.data === undefined ? (
        list.loading ? (
          <Spinner />
        ) : null
      ) : list.data.length === 0 ? (
        <EmptyState title="No package is installed.">
          <p>Load a package document below, preview what it would create, then install it.</p>
        </EmptyState>
      ) : (
        <Table
          caption="Installed packages"
          rows={list.data}
          rowKey={(p) => p.name}
          columns={[
            { key: 'name', label: 'Name', render: (p) => <span className="mono">{p.name}</span> },
            { key: 'version', label: 'Version', render: (p) => p.version },
            { key: 'description', label: 'Description', render: (p) => p.description },
            { key: 'installed', label: 'Installed', render: (p) => formatTime(p.installed_at) },
            {
              key: 'actions',
              label: 'Actions',
              render: (p) => (
                <Button
                  kind="danger"
                  busy={busy === `uninstall:${p.name}`}
                  onClick={() => {
                    if (!window.confirm(`Uninstall ${p.name}? The resources it manages are deleted.`)) return
                    void run(`uninstall:${p.name}`, async () => {
                      await api('DELETE', `/packages/${encodeURIComponent(p.name)}`)
                      setDone(`${p.name} uninstalled.`)
                      list.reload()
                    })
                  }}
                >
                  Uninstall
                </Button>
              ),
            },
          ]}
        />
      )}
      <h2>Install a package</h2>
      <DocumentInput
        fileLabel="Load a package file"
        accept=".yaml,.yml,text/yaml"
        label="Package document (YAML)"
        rows={12}
        value={source}
        onChange={load}
      />
      {preview === undefined ? null : (
        <VariableFields variables={preview.variables} values={values} onChange={setValues} />
      )}
      <div className="page-actions">
        <Button busy={busy === 'preview'} disabled={source.trim() === ''} onClick={() => void doPreview()}>
          Preview
        </Button>
        <Button
          kind="primary"
          busy={busy === 'install'}
          disabled={preview === undefined || !preview.success}
          title={preview === undefined ? 'Preview the package first' : undefined}
          onClick={() =>
            void run('install', async () => {
              const r = await api<ResponseOf<'packages.install'>>('POST', '/packages/install', {
                body: { source, variables: values },
              })
              setDone(`${r.package.name} ${r.package.version} installed.`)
              setPreview(undefined)
              list.reload()
            })
          }
        >
          Install
        </Button>
      </div>
      {done === undefined ? null : (
        <p className="banner banner-ok" role="status">
          {done}
        </p>
      )}
      <ErrorBanner error={error} />
      <Problems errors={problemsOf(error)} />
      {preview === undefined ? null : (
        <>
          <Problems errors={preview.errors} />
          {preview.requires_input ? (
            <p className="muted">Fill in the variables above, then preview again to see the plan with them.</p>
          ) : null}
          <Plan result={preview} dryRun />
        </>
      )}
    </Page>
  )
}

/** One control per package variable, by its declared type; a secret's value is typed, never shown back. */
function VariableFields({
  variables,
  values,
  onChange,
}: {
  variables: readonly Variable[]
  values: Values
  onChange: (v: Values) => void
}) {
  if (variables.length === 0) return null
  const set = (name: string, v: string | boolean) => onChange({ ...values, [name]: v })
  return (
    <fieldset className="variables">
      <legend>Variables</legend>
      {variables.map((v) => (
        <Field key={v.name} label={v.name} help={v.description} required={v.required}>
          {(c) =>
            v.type === 'boolean' ? (
              <input
                {...c}
                type="checkbox"
                checked={values[v.name] === true}
                onChange={(e) => set(v.name, e.target.checked)}
              />
            ) : v.type === 'enum' ? (
              <select {...c} value={String(values[v.name] ?? '')} onChange={(e) => set(v.name, e.target.value)}>
                <option value="">{v.default === undefined ? '—' : `default (${String(v.default)})`}</option>
                {(v.choices ?? []).map((x) => (
                  <option key={x} value={x}>
                    {x}
                  </option>
                ))}
              </select>
            ) : (
              <input
                {...c}
                type={v.type === 'secret' ? 'password' : 'text'}
                autoComplete="off"
                value={String(values[v.name] ?? '')}
                placeholder={v.default === undefined ? undefined : String(v.default)}
                onChange={(e) => set(v.name, e.target.value)}
              />
            )
          }
        </Field>
      ))}
    </fieldset>
  )
}
