import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { decodeState, isTerminal, type JobState, type JobStateStore } from './job-state.ts'

/*
 * The waiters of this process, by job id. A worker of this process that finishes a job tells them
 * its outcome when it has it (`announceJobEnd`), before its completion CAS and the done channel's
 * republish: a chat turn's reply (already committed to Postgres by the turn) reaches its caller
 * without waiting for that round trip. The job's record follows a moment later; should the
 * worker's process die in between, the record ends as a lost worker's would.
 */
const localWaiters = new Map<string, Set<(s: JobState) => void>>()

/** Tells this process's waiters for `s.id` the job's terminal state (a no-op when none waits here). */
export function announceJobEnd(s: JobState): void {
  const set = localWaiters.get(s.id)
  if (set !== undefined) for (const f of set) f(s)
}

/**
 * The ways job `id`'s end reaches this process: its done channel (a core subscription) and, when
 * its worker runs here, `announceJobEnd`; both listened to from now on.
 */
function listenForEnd(nc: NatsConnection, names: NatsNames, id: string) {
  const sub = nc.subscribe(names.subject(`evt.job.${id}`))
  // nats.js sends an UNSUB line for every call (the local end, the timeout and the stop each make
  // one): the server is told once
  let subscribed = true
  const unsubscribe = (): void => {
    if (!subscribed) return
    subscribed = false
    sub.unsubscribe()
  }
  let local: JobState | null = null
  const f = (s: JobState): void => {
    if (local !== null || !isTerminal(s.status)) return
    local = s
    // ends the iteration below (or makes it end at once)
    unsubscribe()
  }
  let set = localWaiters.get(id)
  if (set === undefined) localWaiters.set(id, (set = new Set()))
  set.add(f)
  const stop = (): void => {
    unsubscribe()
    set.delete(f)
    if (set.size === 0 && localWaiters.get(id) === set) localWaiters.delete(id)
  }
  /**
   * The first terminal state from either; the last state seen (`seen`, or null) when the
   * subscription ends first (unsubscribed at `timeoutMs`). Stops listening.
   */
  const first = async (
    timeoutMs: number,
    seen: JobState | null,
  ): Promise<{ last: JobState | null; ended: boolean }> => {
    let last = seen
    const timer = setTimeout(unsubscribe, timeoutMs)
    try {
      for await (const m of sub) {
        if (local !== null) break
        if (m.data.length === 0) continue
        last = decodeState(m.data)
        if (isTerminal(last.status)) return { last, ended: true }
      }
    } finally {
      clearTimeout(timer)
      stop()
    }
    return local === null ? { last, ended: false } : { last: local, ended: true }
  }
  return { first, stop }
}

/*
 * Waits until a job reaches a terminal state, race-free: subscribe to the done channel first, then
 * read the state. A core subscription costs one protocol line; a KV watch would
 * create a consumer per waiter. Returns the last state seen when `timeoutMs` passes first (null if none).
 */
export async function waitForJob(
  nc: NatsConnection,
  names: NatsNames,
  store: JobStateStore,
  id: string,
  timeoutMs: number,
): Promise<JobState | null> {
  const end = listenForEnd(nc, names, id)
  try {
    await nc.flush()
    // No entry yet is normal: a queued job gets its entry when a worker claims it.
    const cur = await store.get(id)
    if (cur !== null && isTerminal(cur.state.status)) return cur.state
    return (await end.first(timeoutMs, cur?.state ?? null)).last
  } finally {
    end.stop()
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
  const end = listenForEnd(nc, names, id)
  return {
    async result(timeoutMs) {
      const out = await end.first(timeoutMs, null)
      if (out.ended) return out.last
      return (await store.get(id).catch(() => null))?.state ?? out.last
    },
    stop: end.stop,
  }
}
