/*
 * Where a consumer remembers the events it has handled, so an event delivered again (a redelivery
 * after a crash, a publisher's duplicate, a replay over events already seen) is acknowledged
 * without running the handler a second time.
 */
export interface DedupeStore {
  /** Whether `key` was handled already: the event is then acknowledged, the handler not called. */
  has(key: string): Promise<boolean>
  /**
   * Records `key` after the handler resolved, before the acknowledgement. Leave it out when the
   * handler records the key itself, in the same transaction as its effect (`meta.dedupeKey`):
   * that is what makes the effect exactly once (docs/events-client.md).
   */
  add?(key: string): Promise<void>
  /** Called once by `stop()`. */
  close?(): Promise<void>
}

/**
 * Keys in this process's memory, the newest `max` of them: enough for a replay within one run,
 * forgotten at exit (a restart re-handles what was delivered but not acknowledged).
 */
export function memoryDedupe(max = 100_000): DedupeStore {
  const keys = new Set<string>()
  return {
    has: (key) => Promise.resolve(keys.has(key)),
    add(key) {
      keys.add(key)
      if (keys.size > max) keys.delete(keys.values().next().value as string)
      return Promise.resolve()
    },
  }
}
