import type { Config } from '../kernel/config.ts'
import { ShareLines } from './share-lines.ts'

/*
 * The per-user fair share of the function pool: at most `cap` function jobs of one user run at
 * once in this process (every function worker replica of the process shares one gate, as they
 * share one sandbox pool). A worker asks before it claims a job; a job over its user's share waits
 * in its user's line (share-lines.ts) without holding a slot or a sandbox, until a job of that
 * user ends here and hands it the place; when the line is full, or the wait is long, it goes back
 * to the queue (nak, no attempt counted). So one user's backlog of long jobs cannot take every
 * slot from everybody else's calls, and that user's own jobs still start in the order they came.
 *
 * Per process, not cluster-wide: each worker process enforces its own share, so a user may run up
 * to `cap` jobs in each of them. A cluster-wide count would put a NATS round trip (a KV CAS) on
 * every claim and leave counts behind when a process dies; what is protected is a process's own
 * slots and sandboxes, and that the per-process gate does.
 */
export interface UserShare {
  readonly cap: number
  /** Takes one of the user's places; false when the user already runs `cap` jobs here. */
  tryEnter(user: string | null): boolean
  leave(user: string | null): void
  running(user: string | null): number
  /** Jobs over their user's share waiting here for a place, per user in arrival order. */
  readonly waiting: ShareLines
}

/** How long a job over its user's share waits in the queue before a worker looks at it again (its line full). */
export const USER_SHARE_RETRY_MS = 500

/** The longest a job waits in its user's line here before it goes back to the queue. */
const LINE_WAIT_MS = 10_000

/** FUNCTION_MAX_CONCURRENT_PER_USER, or half of the slots (and sandboxes) of this process. */
export function userShareCap(config: Config, replicas: number): number {
  if (config.FUNCTION_MAX_CONCURRENT_PER_USER > 0) return config.FUNCTION_MAX_CONCURRENT_PER_USER
  const slots = replicas * config.QUEUE_FUNCTION_CONCURRENCY
  const usable = config.SANDBOX_EXECUTOR === 'pool' ? Math.min(slots, config.SANDBOX_MAX_SIZE) : slots
  return Math.max(1, Math.floor(usable / 2))
}

/**
 * `ackWaitMs`: the queue's ack wait; a job waits in its line at most half of it (and at most
 * LINE_WAIT_MS), so its message is not redelivered meanwhile.
 */
export function createUserShare(cap: number, ackWaitMs = 60_000): UserShare {
  const counts = new Map<string, number>()
  // a few rounds of the user's places: a burst's order is kept, memory stays small
  const waiting = new ShareLines({ perUser: Math.max(16, cap * 4), maxWaitMs: Math.min(LINE_WAIT_MS, ackWaitMs / 2) })
  // jobs without a user (system triggers) share one place among them
  const key = (user: string | null) => user ?? ''
  return {
    cap,
    tryEnter(user) {
      const n = counts.get(key(user)) ?? 0
      if (n >= cap) return false
      counts.set(key(user), n + 1)
      return true
    },
    leave(user) {
      const n = (counts.get(key(user)) ?? 0) - 1
      if (n <= 0) counts.delete(key(user))
      else counts.set(key(user), n)
    },
    running: (user) => counts.get(key(user)) ?? 0,
    waiting,
  }
}
