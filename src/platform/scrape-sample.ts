/*
 * A value read from NATS or Postgres for the metrics, at scrape time but not at every scrape: the
 * last value is kept `maxAgeMs`, a read in flight is shared, and a scrape waits at most
 * `timeoutMs` for a fresh one (then it reports the last value, and the read goes on to refresh
 * it). A read that fails reports nothing (the series is absent from that scrape) rather than a
 * stale number that looks current.
 */
export interface ScrapeSampleOptions {
  maxAgeMs: number
  timeoutMs: number
}

export function scrapeSample<T>(read: () => Promise<T>, o: ScrapeSampleOptions): () => Promise<T | undefined> {
  let last: { value: T; at: number } | undefined
  let inFlight: Promise<T | undefined> | undefined
  const refresh = (): Promise<T | undefined> =>
    (inFlight ??= read()
      .then(
        (value) => {
          last = { value, at: performance.now() }
          return value
        },
        () => {
          last = undefined
          return undefined
        },
      )
      .finally(() => {
        inFlight = undefined
      }))
  return async () => {
    if (last !== undefined && performance.now() - last.at < o.maxAgeMs) return last.value
    let timer: NodeJS.Timeout | undefined
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), o.timeoutMs)
    })
    try {
      const got = await Promise.race([refresh(), timedOut])
      return got === 'timeout' ? last?.value : got
    } finally {
      clearTimeout(timer)
    }
  }
}
