import { useEffect, type ReactNode } from 'react'

/** The layout of a page: its heading (and the document title), actions on the right, the body. */
export function Page({ title, actions, children }: { title: string; actions?: ReactNode; children: ReactNode }) {
  useEffect(() => {
    document.title = `${title} · Console`
  }, [title])
  return (
    <section className="page" aria-labelledby="page-title">
      <header className="page-head">
        <h1 id="page-title" tabIndex={-1}>
          {title}
        </h1>
        {actions === undefined ? null : <div className="page-actions">{actions}</div>}
      </header>
      {children}
    </section>
  )
}
