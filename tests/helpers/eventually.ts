/**
 * Polls `probe` until it returns something other than undefined, or fails after `ms` naming what
 * it waited for. For conditions reached asynchronously (a mirror, a takeover); never used to
 * assert how long something took.
 */
export async function eventually<T>(
  probe: () => Promise<T | undefined>,
  what: string,
  ms = 20_000,
  everyMs = 50,
): Promise<T> {
  const until = Date.now() + ms
  for (;;) {
    const v = await probe()
    if (v !== undefined) return v
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, everyMs))
  }
}
