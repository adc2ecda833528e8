import type { AnchorHTMLAttributes, MouseEvent } from 'react'
import { navigate } from './router.ts'

/** An in-app link: a real <a href> (open in a new tab works) that navigates without a reload. */
export function Link(props: AnchorHTMLAttributes<HTMLAnchorElement> & { href: string }) {
  const onClick = (e: MouseEvent<HTMLAnchorElement>) => {
    props.onClick?.(e)
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return
    e.preventDefault()
    navigate(props.href)
  }
  return <a {...props} onClick={onClick} />
}
