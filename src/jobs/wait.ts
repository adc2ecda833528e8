import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { decodeState, isTerminal, type JobState, type JobStateStore } from './job-state.ts'

/*
 * Waits until a job reaches a terminal state, race-free: subscribe to the done channel first, then
 * read the state (research §4.5). A core subscription costs one protocol line; a KV watch would
 * create a consumer per waiter. Returns the last state seen when `timeoutMs` passes first (null if none).
 */
export async function waitForJob(nc: NatsConnection, names: NatsNames, store: JobStateStore, id: string, timeoutMs: number): Promise<JobState | null> {
  const sub = nc.subscribe(names.subject(`evt.job.${id}`))
  try {
    await nc.flush()
    // No entry yet is normal: a queued job gets its entry when a worker claims it.
    const cur = await store.get(id)
    if (cur !== null && isTerminal(cur.state.status)) return cur.state
    let last: JobState | null = cur?.state ?? null
    const timer = setTimeout(() => sub.unsubscribe(), timeoutMs)
    try {
      for await (const m of sub) {
        if (m.data.length === 0) continue
        last = decodeState(m.data)
        if (isTerminal(last.status)) return last
      }
    } finally {
      clearTimeout(timer)
    }
    return last
  } finally {
    sub.unsubscribe()
  }
}

/**
 * A waiter for a job the caller is about to submit under a fresh id: subscribed before the submit,
 * on the caller's connection, so the server has the subscription before it can see the job, and
 * its end cannot be missed — no flush and no state read before waiting (two round trips fewer
 * than `waitForJob`). Only when nothing came within `timeoutMs` (e.g. the connection dropped
 * meanwhile) is the state read once. Call `stop()` when the submit failed.
 */
export interface JobWatch {
  result(timeoutMs: number): Promise<JobState | null>
  stop(): void
}

export function watchJob(nc: NatsConnection, names: NatsNames, store: JobStateStore, id: string): JobWatch {
  const sub = nc.subscribe(names.subject(`evt.job.${id}`))
  return {
    async result(timeoutMs) {
      let last: JobState | null = null
      const timer = setTimeout(() => sub.unsubscribe(), timeoutMs)
      try {
        for await (const m of sub) {
          if (m.data.length === 0) continue
          last = decodeState(m.data)
          if (isTerminal(last.status)) return last
        }
      } finally {
        clearTimeout(timer)
        sub.unsubscribe()
      }
      return (await store.get(id).catch(() => null))?.state ?? last
    },
    stop: () => sub.unsubscribe(),
  }
}
