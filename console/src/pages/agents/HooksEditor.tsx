import { useId } from 'react'
import { Button } from '../../ui/index.ts'
import type { Agent } from '../work/types.ts'

/* The agent's message hooks: per stage, functions run in order, each sync or async and what a failure does. */
export type Hooks = Agent['hooks']
type Hook = Hooks['on_user_message'][number]

const STAGES: { key: keyof Hooks; title: string }[] = [
  { key: 'on_user_message', title: 'Before the model reads a user message' },
  { key: 'on_assistant_message', title: 'Before the user reads an answer' },
]

export function HooksEditor({
  value,
  onChange,
  functions,
}: {
  value: Hooks
  onChange: (h: Hooks) => void
  functions: string[] | null
}) {
  const id = useId()
  return (
    <fieldset className="hooks">
      <legend>Hooks</legend>
      {STAGES.map(({ key, title }) => {
        const list = value[key]
        const set = (next: Hook[]) => onChange({ ...value, [key]: next })
        return (
          <div key={key} className="hook-stage">
            <h3>{title}</h3>
            {list.length === 0 && <p className="muted">None.</p>}
            <ol>
              {list.map((h, i) => {
                const fid = `${id}-${key}-${String(i)}`
                const put = (patch: Partial<Hook>) => set(list.map((x, j) => (j === i ? { ...x, ...patch } : x)))
                return (
                  <li key={i} className="hook-row">
                    <label htmlFor={`${fid}-fn`}>Function</label>
                    <select id={`${fid}-fn`} value={h.function} onChange={(e) => put({ function: e.target.value })}>
                      {[...new Set([h.function, ...(functions ?? [])])].map((f) => (
                        <option key={f} value={f}>
                          {f}
                        </option>
                      ))}
                    </select>
                    <input
                      id={`${fid}-async`}
                      type="checkbox"
                      className="checkbox"
                      checked={h.async}
                      onChange={(e) => put({ async: e.target.checked })}
                    />
                    <label htmlFor={`${fid}-async`}>async</label>
                    <label htmlFor={`${fid}-timeout`}>on failure</label>
                    <select
                      id={`${fid}-timeout`}
                      value={h.on_timeout}
                      disabled={h.async}
                      onChange={(e) => put({ on_timeout: e.target.value as Hook['on_timeout'] })}
                    >
                      <option value="passthrough">let the message pass</option>
                      <option value="block">block the message</option>
                    </select>
                    <Button
                      className="btn-small"
                      onClick={() => set(list.filter((_, j) => j !== i))}
                      aria-label={`Remove hook ${String(i + 1)}`}
                    >
                      Remove
                    </Button>
                  </li>
                )
              })}
            </ol>
            <Button
              className="btn-small"
              disabled={functions === null || functions.length === 0}
              onClick={() =>
                set([...list, { function: functions?.[0] ?? '', async: false, on_timeout: 'passthrough' }])
              }
            >
              Add a hook
            </Button>
          </div>
        )
      })}
    </fieldset>
  )
}
