/* A JSON value shown as indented text (never as HTML). */
export function JsonView({ value, label }: { value: unknown; label: string }) {
  let text: string
  try {
    text = typeof value === 'string' ? value : (JSON.stringify(value, null, 2) ?? String(value))
  } catch {
    text = String(value)
  }
  return (
    <pre className="pre json-view" aria-label={label} tabIndex={0}>
      {text}
    </pre>
  )
}
