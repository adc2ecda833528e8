import { useId, useState } from 'react'
import { Button } from '../../ui/index.ts'

/*
 * Picks references (`<ns>/<name>`) from what exists, as checkboxes, and keeps any other value the
 * agent already names (a wildcard such as `tools/*`, or something deleted since) as a removable
 * entry; a pattern can be added by hand.
 */
export function RefPicker({
  legend,
  options,
  value,
  onChange,
  empty,
}: {
  legend: string
  options: string[] | null
  value: string[]
  onChange: (v: string[]) => void
  empty: string
}) {
  const id = useId()
  const [pattern, setPattern] = useState('')
  const chosen = new Set(value)
  const others = value.filter((v) => options === null || !options.includes(v))
  const toggle = (ref: string, on: boolean) => onChange(on ? [...value, ref] : value.filter((v) => v !== ref))
  return (
    <fieldset className="pick">
      <legend>{legend}</legend>
      {options === null ? (
        <p className="muted">Loading…</p>
      ) : options.length === 0 && others.length === 0 ? (
        <p className="muted">{empty}</p>
      ) : null}
      <ul className="pick-list">
        {(options ?? []).map((ref) => (
          <li key={ref}>
            <input
              id={`${id}-${ref}`}
              type="checkbox"
              className="checkbox"
              checked={chosen.has(ref)}
              onChange={(e) => toggle(ref, e.target.checked)}
            />
            <label htmlFor={`${id}-${ref}`}>{ref}</label>
          </li>
        ))}
        {others.map((ref) => (
          <li key={ref} className="pick-other">
            <code>{ref}</code>{' '}
            <Button className="btn-small" onClick={() => toggle(ref, false)} aria-label={`Remove ${ref}`}>
              Remove
            </Button>
          </li>
        ))}
      </ul>
      <div className="pick-add">
        <label htmlFor={`${id}-pattern`} className="sr-only">
          Add a pattern to {legend}
        </label>
        <input
          id={`${id}-pattern`}
          placeholder="namespace/* or namespace/name"
          value={pattern}
          onChange={(e) => setPattern(e.target.value)}
        />
        <Button
          className="btn-small"
          disabled={!/^[^/\s]+\/[^/\s]+$/.test(pattern) || chosen.has(pattern)}
          onClick={() => {
            onChange([...value, pattern])
            setPattern('')
          }}
        >
          Add
        </Button>
      </div>
    </fieldset>
  )
}
