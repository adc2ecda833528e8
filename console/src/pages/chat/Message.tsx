import { memo } from 'react'
import { Markdown } from './Markdown.tsx'
import { ToolCall } from './ToolCall.tsx'
import type { Item } from './transcript.ts'

/* One row of the chat: a user bubble, an answer (markdown and tool calls in order) or a notice. */
export const Message = memo(function Message({
  item,
  onDecide,
  busy,
}: {
  item: Item
  onDecide: (id: string, approved: boolean) => void
  busy: boolean
}) {
  if (item.kind === 'notice')
    return (
      <div className={`msg msg-notice msg-${item.tone ?? 'info'}`} role={item.tone === 'error' ? 'alert' : 'status'}>
        {item.parts.map((p) => (p.type === 'text' ? p.text : '')).join('')}
      </div>
    )
  return (
    <article
      className={`msg msg-${item.kind}`}
      aria-label={item.kind === 'user' ? 'You' : 'Assistant'}
      data-message={item.key}
      data-live={item.live === true ? '1' : undefined}
    >
      {item.parts.map((p, i) =>
        p.type === 'text' ? (
          item.kind === 'user' ? (
            <p key={i} className="msg-text">
              {p.text}
            </p>
          ) : (
            <Markdown key={i} text={p.text} live={item.live === true} />
          )
        ) : (
          <ToolCall key={p.id} tool={p} onDecide={onDecide} busy={busy} />
        ),
      )}
      {item.live === true && item.parts.length === 0 && (
        <span className="typing" aria-label="The assistant is answering" />
      )}
    </article>
  )
})
