import type { ReactNode } from 'react'

/** What an empty list shows: what the list is for and what to do next (usually a create button). */
export function EmptyState({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty">
      <p className="empty-title">{title}</p>
      {children}
    </div>
  )
}
