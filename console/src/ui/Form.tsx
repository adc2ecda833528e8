import { useState, type FormEvent, type ReactNode } from 'react'
import { ApiError } from '../api/client.ts'
import { Button } from './Button.tsx'
import { ErrorBanner } from './ErrorBanner.tsx'

/**
 * A small form with a submit button that runs an async action: busy while it runs, the API's
 * message above the fields when it fails (`children` gets the error to mark fields with).
 */
export function ActionForm({
  label,
  submit,
  onDone,
  children,
}: {
  label: string
  submit: () => Promise<unknown>
  onDone?: () => void
  children: (error: ApiError | undefined) => ReactNode
}) {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(undefined)
  const run = async (e: FormEvent) => {
    e.preventDefault()
    setBusy(true)
    setError(undefined)
    try {
      await submit()
      onDone?.()
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  return (
    <form className="actions-box" onSubmit={(e) => void run(e)} aria-label={label}>
      <ErrorBanner error={error} />
      {children(error instanceof ApiError ? error : undefined)}
      <Button kind="primary" type="submit" busy={busy}>
        {label}
      </Button>
    </form>
  )
}

/**
 * Runs an action from a button; the error is the caller's to show. Several buttons may share one:
 * `run(fn, what)` names the action, and `doing` is the name of the one running (`busy` on that
 * button only).
 */
export function useAction(): {
  busy: boolean
  doing: string | undefined
  error: unknown
  run: (fn: () => Promise<unknown>, what?: string) => Promise<void>
} {
  const [doing, setDoing] = useState<string | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  return {
    busy: doing !== undefined,
    doing,
    error,
    run: async (fn, what = '') => {
      setDoing(what)
      setError(undefined)
      try {
        await fn()
      } catch (e) {
        setError(e)
      } finally {
        setDoing(undefined)
      }
    },
  }
}
