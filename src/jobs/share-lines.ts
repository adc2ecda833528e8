import type { JobState } from './job-state.ts'
import type { PulledMessage } from './puller.ts'

/** A job over its user's fair share, waiting in this process for one of that user's places. */
export interface WaitingJob {
  m: PulledMessage
  id: string
  carried: JobState
}

interface Entry extends WaitingJob {
  timer: NodeJS.Timeout
}

/**
 * The jobs over their user's fair share (user-share.ts), in arrival order per user. A job that
 * finds its user at the cap waits here without a slot or a sandbox, and the place the user's next
 * finishing job frees goes straight to the oldest one. Handing it back to the queue instead (a nak
 * with a delay) served one user's burst in random order: every job came back after the delay
 * whether a place had freed or not, and the newest could run before the oldest, so the slowest
 * calls of a burst waited many times as long as the typical one.
 *
 * Bounded both ways: at most `perUser` jobs wait per user (the rest go back to the queue as
 * before), and none waits longer than `maxWaitMs` (then it goes back to the queue, where another
 * worker process, whose share of that user may be free, can take it). `maxWaitMs` stays under the
 * ack wait, so a waiting message needs no sign of life.
 */
export class ShareLines {
  private readonly lines = new Map<string, Entry[]>()
  private readonly perUser: number
  private readonly maxWaitMs: number

  constructor(o: { perUser: number; maxWaitMs: number }) {
    this.perUser = o.perUser
    this.maxWaitMs = o.maxWaitMs
  }

  /** Queues `job` behind its user's others; false when that user's line is full. */
  enter(job: WaitingJob): boolean {
    const key = keyOf(job.carried.user_id)
    const line = this.lines.get(key) ?? []
    if (line.length >= this.perUser) return false
    const entry: Entry = {
      ...job,
      timer: setTimeout(() => {
        if (this.remove(key, entry)) job.m.nak()
      }, this.maxWaitMs),
    }
    line.push(entry)
    this.lines.set(key, line)
    return true
  }

  /** The oldest job waiting for a place of `user`, taken out of its line. */
  next(user: string | null): WaitingJob | undefined {
    const key = keyOf(user)
    const line = this.lines.get(key)
    const entry = line?.shift()
    if (line !== undefined && line.length === 0) this.lines.delete(key)
    if (entry === undefined) return undefined
    clearTimeout(entry.timer)
    return { m: entry.m, id: entry.id, carried: entry.carried }
  }

  /** Jobs waiting, all users. */
  get size(): number {
    let n = 0
    for (const line of this.lines.values()) n += line.length
    return n
  }

  /** Hands every waiting job back to the queue at once (the worker is stopping). */
  release(): void {
    for (const line of this.lines.values())
      for (const entry of line) {
        clearTimeout(entry.timer)
        entry.m.nak()
      }
    this.lines.clear()
  }

  private remove(key: string, entry: Entry): boolean {
    const line = this.lines.get(key)
    const i = line?.indexOf(entry) ?? -1
    if (line === undefined || i === -1) return false
    line.splice(i, 1)
    if (line.length === 0) this.lines.delete(key)
    return true
  }
}

// jobs without a user (system triggers) share one line, as they share one place (user-share.ts)
const keyOf = (user: string | null) => user ?? ''
