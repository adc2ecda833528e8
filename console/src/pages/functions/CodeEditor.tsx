import { useEffect, useRef, useState } from 'react'
import type { Editor, Language } from './editor.ts'

/*
 * A CodeMirror editor as a controlled React field. The editor module is imported on mount (its own
 * chunk); until it arrives a read-only preformatted copy of the value holds the place.
 */
export function CodeEditor({
  value,
  onChange,
  language,
  label,
  readOnly,
}: {
  value: string
  onChange: (text: string) => void
  language: Language
  label: string
  readOnly?: boolean
}) {
  const host = useRef<HTMLDivElement>(null)
  const editor = useRef<Editor | null>(null)
  const change = useRef(onChange)
  change.current = onChange
  const latest = useRef(value)
  latest.current = value
  const [ready, setReady] = useState(false)
  const [failed, setFailed] = useState<string | null>(null)

  useEffect(() => {
    let live = true
    const start = async () => {
      try {
        const m = await import('./editor.ts')
        const e = await m.createEditor(host.current as HTMLDivElement, {
          value: latest.current,
          language,
          label,
          readOnly: readOnly === true,
          onChange: (t) => change.current(t),
        })
        if (!live) return e.destroy()
        editor.current = e
        setReady(true)
      } catch (err) {
        if (live) setFailed(err instanceof Error ? err.message : String(err))
      }
    }
    void start()
    return () => {
      live = false
      editor.current?.destroy()
      editor.current = null
    }
    // the editor is made once per language; value changes reach it below
  }, [language, readOnly, label])

  useEffect(() => editor.current?.setValue(value), [value])

  if (failed !== null)
    return (
      <textarea
        className="code-fallback"
        aria-label={label}
        value={value}
        readOnly={readOnly}
        onChange={(e) => onChange(e.target.value)}
      />
    )
  return (
    <div className="code-editor" data-ready={ready ? '1' : '0'}>
      {!ready && <pre className="code-placeholder">{value}</pre>}
      <div ref={host} />
    </div>
  )
}
