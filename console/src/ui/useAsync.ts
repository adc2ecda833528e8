import { useCallback, useEffect, useRef, useState } from 'react'

/**
 * Loads data for a component: re-runs when `deps` change, aborts the previous call, and keeps
 * `{data, error, loading}`; `reload()` runs it again (after an action changed the data).
 */
export function useAsync<T>(
  load: (signal: AbortSignal) => Promise<T>,
  deps: readonly unknown[],
): { data: T | undefined; error: unknown; loading: boolean; reload: () => void } {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({
    data: undefined,
    error: undefined,
    loading: true,
  })
  const [tick, setTick] = useState(0)
  const loadRef = useRef(load)
  loadRef.current = load
  useEffect(() => {
    const ctl = new AbortController()
    setState((s) => ({ ...s, loading: true, error: undefined }))
    const run = async () => {
      try {
        const data = await loadRef.current(ctl.signal)
        if (!ctl.signal.aborted) setState({ data, error: undefined, loading: false })
      } catch (error) {
        if (!ctl.signal.aborted) setState({ data: undefined, error, loading: false })
      }
    }
    void run()
    return () => ctl.abort()
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick])
  const reload = useCallback(() => setTick((n) => n + 1), [])
  return { ...state, reload }
}
