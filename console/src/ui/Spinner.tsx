/** Something is loading: announced to screen readers, drawn as a small spinner. */
export function Spinner({ label = 'Loading' }: { label?: string }) {
  return (
    <div className="spinner" role="status" aria-live="polite">
      <span className="spinner-dot" aria-hidden="true" />
      <span className="sr-only">{label}</span>
    </div>
  )
}

/** A determinate progress bar (0..1). */
export function Progress({ value, label }: { value: number; label: string }) {
  return <progress className="progress" value={Math.max(0, Math.min(1, value))} max={1} aria-label={label} />
}
