import { useEffect, useState } from 'react'

/*
 * A page's own query parameters (`?chat=…`, `?fn=…`): which item of a work page is open. Kept in
 * the address so a reload or a shared link opens the same thing; changed with pushState.
 */
export function useSearchParam(name: string): [string | null, (value: string | null) => void] {
  const read = () => new URLSearchParams(window.location.search).get(name)
  const [value, setValue] = useState(read)
  useEffect(() => {
    const sync = () => setValue(read())
    window.addEventListener('popstate', sync)
    return () => window.removeEventListener('popstate', sync)
  }, [name])
  const set = (v: string | null) => {
    const url = new URL(window.location.href)
    if (v === null) url.searchParams.delete(name)
    else url.searchParams.set(name, v)
    window.history.pushState(null, '', url)
    setValue(v)
  }
  return [value, set]
}
