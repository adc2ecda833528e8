import { ApiError } from '../api/client.ts'

/**
 * A failed action: the API's own message (its `detail`), and for a 403 a plain sentence that the
 * signed-in user lacks the permission, so a forbidden action is never a silent no-op.
 */
export function ErrorBanner({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null
  const e = error instanceof ApiError ? error : undefined
  const message = e !== undefined ? e.message : error instanceof Error ? error.message : String(error)
  return (
    <div className="banner banner-error" role="alert">
      {e?.status === 403 ? <strong>You do not have permission for this. </strong> : null}
      <span>{message}</span>
      {e === undefined ? null : <span className="muted"> ({e.code})</span>}
    </div>
  )
}
