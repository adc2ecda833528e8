import { Button } from '../../ui/index.ts'
import type { ToolPart } from './transcript.ts'

/* One tool call in an answer: its name and arguments, its result once there, approve/refuse while it waits. */
export function ToolCall({
  tool,
  onDecide,
  busy,
}: {
  tool: ToolPart
  onDecide?: (id: string, approved: boolean) => void
  busy?: boolean
}) {
  return (
    <details className={`tool tool-${tool.state}`} open={tool.state === 'awaiting_approval'}>
      <summary>
        <span className="tool-name">{tool.name}</span> <span className="tool-state">{STATE[tool.state]}</span>
      </summary>
      <div className="tool-body">
        <div className="tool-label">Arguments</div>
        <pre className="tool-json">{pretty(tool.arguments)}</pre>
        {tool.result !== undefined && (
          <>
            <div className="tool-label">Result</div>
            <pre className="tool-json">{pretty(tool.result)}</pre>
          </>
        )}
        {tool.state === 'awaiting_approval' && onDecide !== undefined && (
          <div className="tool-actions" role="group" aria-label={`Approve ${tool.name}?`}>
            <Button kind="primary" busy={busy} onClick={() => onDecide(tool.id, true)}>
              Approve
            </Button>
            <Button busy={busy} onClick={() => onDecide(tool.id, false)}>
              Refuse
            </Button>
          </div>
        )}
      </div>
    </details>
  )
}

const STATE: Record<ToolPart['state'], string> = {
  running: 'running…',
  done: 'done',
  awaiting_approval: 'waits for your approval',
  refused: 'refused',
}

function pretty(v: unknown): string {
  if (typeof v === 'string') {
    try {
      return JSON.stringify(JSON.parse(v), null, 2)
    } catch {
      return v
    }
  }
  return JSON.stringify(v, null, 2) ?? ''
}
