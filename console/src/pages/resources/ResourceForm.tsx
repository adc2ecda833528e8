import { useEffect, useState, type ComponentType, type FormEvent } from 'react'
import { api, ApiError } from '../../api/client.ts'
import { bodySchema, type JsonSchema } from '../../api/openapi.ts'
import type { PageProps } from '../../app/pages.ts'
import { navigate } from '../../app/router.ts'
import { Button, ErrorBanner, Page, SchemaForm, Spinner, type FormValue } from '../../ui/index.ts'
import { apiChangePath, apiReadPath, resourceInfo, resourcePath, schemaPaths, type ResourceInfo } from './kinds.ts'

/*
 * Create and edit, from the JSON schemas of the kind's create and update bodies in the OpenAPI
 * document. Edit starts from the stored record (secret fields are never returned: left empty,
 * they stay as they are). A refused save shows the API's message and marks the named fields.
 */
type Mode = 'create' | 'edit'
const pages = new Map<string, ComponentType<PageProps>>()

export function formPage(plural: string, mode: Mode): ComponentType<PageProps> {
  const id = `${plural}:${mode}`
  let p = pages.get(id)
  if (p === undefined) {
    const r = resourceInfo(plural)
    p = function ResourceFormPage({ params }: PageProps) {
      return <ResourceForm r={r} mode={mode} params={params} />
    }
    pages.set(id, p)
  }
  return p
}

function ResourceForm({ r, mode, params }: { r: ResourceInfo; mode: Mode; params: Record<string, string> }) {
  const [schema, setSchema] = useState<JsonSchema | undefined>(undefined)
  const [record, setRecord] = useState<Record<string, unknown> | undefined>(undefined)
  const [value, setValue] = useState<FormValue>({})
  const [loadError, setLoadError] = useState<unknown>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  const [busy, setBusy] = useState(false)
  const paths = schemaPaths(r)
  useEffect(() => {
    const ctl = new AbortController()
    const method = mode === 'create' ? 'POST' : r.updateMethod
    const path = mode === 'create' ? paths.create : paths.update
    const load = async () => {
      const [s, rec] = await Promise.all([
        bodySchema(method, path),
        mode === 'edit'
          ? api<Record<string, unknown>>('GET', apiReadPath(r, params), { signal: ctl.signal })
          : undefined,
      ])
      if (ctl.signal.aborted) return
      if (s === undefined) throw new Error(`the API document has no ${method} ${path}`)
      setSchema(s)
      if (rec !== undefined) {
        setRecord(rec)
        // start from the stored values of the fields the update body takes
        const keys = Object.keys(s.properties ?? {})
        setValue(Object.fromEntries(keys.filter((k) => k in rec && !r.secrets.includes(k)).map((k) => [k, rec[k]])))
      } else if (params['namespace'] !== undefined) setValue({ namespace: params['namespace'] })
    }
    load().catch((e: unknown) => {
      if (!ctl.signal.aborted) setLoadError(e)
    })
    return () => ctl.abort()
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [r.plural, mode, params['namespace'], params['name'], params['key']])

  const submit = async (e: FormEvent) => {
    e.preventDefault()
    setBusy(true)
    setError(undefined)
    try {
      const saved =
        mode === 'create'
          ? await api<Record<string, unknown>>('POST', r.base, { body: value })
          : await api<Record<string, unknown>>(r.updateMethod, apiChangePath(r, record ?? {}), {
              body: changed(value, record),
            })
      navigate(resourcePath(r, saved ?? record ?? {}))
    } catch (err) {
      setError(err)
      document.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus()
    } finally {
      setBusy(false)
    }
  }
  const title = mode === 'create' ? `New ${r.title.toLowerCase()}` : `Edit ${r.title.toLowerCase()}`
  return (
    <Page title={title}>
      <ErrorBanner error={loadError} />
      {schema === undefined ? (
        loadError === undefined ? (
          <Spinner />
        ) : null
      ) : (
        <form onSubmit={(e) => void submit(e)} noValidate aria-label={title}>
          <ErrorBanner error={error} />
          {mode === 'edit' && r.secrets.length > 0 ? (
            <p className="muted">
              Secret fields ({r.secrets.join(', ')}) are never shown: leave them empty to keep them.
            </p>
          ) : null}
          <SchemaForm
            schema={schema}
            value={value}
            onChange={setValue}
            error={error instanceof ApiError ? error : undefined}
          />
          <div className="form-actions">
            <Button kind="primary" type="submit" busy={busy}>
              {mode === 'create' ? 'Create' : 'Save'}
            </Button>
            <Button onClick={() => history.back()}>Cancel</Button>
          </div>
        </form>
      )}
    </Page>
  )
}

/** The fields that differ from the stored record (an update sends only what changed). */
function changed(value: FormValue, record: Record<string, unknown> | undefined): FormValue {
  if (record === undefined) return value
  return Object.fromEntries(Object.entries(value).filter(([k, v]) => JSON.stringify(v) !== JSON.stringify(record[k])))
}
