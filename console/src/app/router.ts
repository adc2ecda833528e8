import { useEffect, useState } from 'react'

/*
 * A small history router: the URL is the state (every page has its own URL, back/forward work),
 * `navigate` pushes, links are plain <a href> intercepted by the shell (Link below).
 */
const listeners = new Set<() => void>()

export function navigate(to: string, opts: { replace?: boolean } = {}): void {
  if (opts.replace === true) history.replaceState(null, '', to)
  else history.pushState(null, '', to)
  for (const fn of listeners) fn()
}

window.addEventListener('popstate', () => {
  for (const fn of listeners) fn()
})

/** The current location (`pathname` and `search`), re-rendering on navigation. */
export function useLocation(): { pathname: string; search: URLSearchParams } {
  const [, setTick] = useState(0)
  useEffect(() => {
    const fn = () => setTick((n) => n + 1)
    listeners.add(fn)
    return () => {
      listeners.delete(fn)
    }
  }, [])
  return { pathname: location.pathname, search: new URLSearchParams(location.search) }
}

/** Replaces the query string's values (undefined or '' removes one) without a new history entry. */
export function setSearch(values: Record<string, string | number | undefined>): void {
  const search = new URLSearchParams(location.search)
  for (const [k, v] of Object.entries(values)) {
    if (v === undefined || v === '') search.delete(k)
    else search.set(k, String(v))
  }
  const qs = search.toString()
  navigate(`${location.pathname}${qs === '' ? '' : `?${qs}`}`, { replace: true })
}
