import type { ButtonHTMLAttributes } from 'react'

/** A button; `kind` picks the look (primary for the page's main action, danger for deletes). */
export function Button({
  kind = 'secondary',
  busy = false,
  className,
  ...rest
}: ButtonHTMLAttributes<HTMLButtonElement> & { kind?: 'primary' | 'secondary' | 'danger'; busy?: boolean }) {
  return (
    <button
      type="button"
      {...rest}
      className={`btn btn-${kind}${className === undefined ? '' : ` ${className}`}`}
      disabled={rest.disabled === true || busy}
      aria-busy={busy || undefined}
    />
  )
}
