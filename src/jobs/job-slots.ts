import { decodeState, type JobState } from './job-state.ts'
import { claimDelivery, firstClaim } from './claim.ts'
import type { PulledMessage } from './puller.ts'
import { runJob } from './run-job.ts'
import type { WaitingJob } from './share-lines.ts'
import { USER_SHARE_RETRY_MS } from './user-share.ts'
import { RETRYABLE, type WorkerState } from './worker-state.ts'

/**
 * The slots of one pool worker: each slot loop pulls one job at a time and handles it (share
 * check, claim, run); `blocking` lends a waiting job's slot to one extra pull.
 */
export class JobSlots {
  private readonly w: WorkerState
  /** Jobs between a delivery's arrival and the end of its run here (claim included). */
  private readonly inHand = new Set<string>()

  constructor(w: WorkerState) {
    this.w = w
  }

  /** One slot: pull, handle, repeat until the puller is closed. */
  async slot(): Promise<void> {
    const { puller, running, log } = this.w
    for (;;) {
      // take() answers null once stop() closed the puller.
      const m: PulledMessage | null = await puller.take()
      if (m === null) return
      if (this.w.stopping) {
        m.nak()
        return
      }
      const p = this.handle(m).catch((err: unknown) => {
        // The message is left unacked: it comes back after ack_wait and is judged again.
        log.error({ err, subject: m.subject }, 'job handling failed')
      })
      running.add(p)
      await p
      running.delete(p)
    }
  }

  /** JobContext.blocking: waits for `p` while one extra pull runs in this job's place. */
  async blocking<T>(p: Promise<T>): Promise<T> {
    const { puller, running, log } = this.w
    const loan = { active: true }
    const extra = (async () => {
      for (;;) {
        if (!loan.active || this.w.stopping) return
        const m: PulledMessage | null = await puller.take()
        if (m === null) return
        const h = this.handle(m).catch((err: unknown) => log.error({ err, subject: m.subject }, 'job handling failed'))
        running.add(h)
        await h
        running.delete(h)
      }
    })()
    try {
      return await p
    } finally {
      loan.active = false
      void extra
    }
  }

  private async handle(m: PulledMessage): Promise<void> {
    const id = m.subject.slice(m.subject.lastIndexOf('.') + 1)
    const carried = decodeState(m.data)
    if (carried.id !== id) {
      m.term()
      return
    }
    // SHARED_POOL_RESERVE (nested-reserve.ts): a top-level job over its share of the slots goes
    // back to the queue unclaimed, so the reserved slots stay free for nested calls.
    const gate = (carried.depth ?? 0) === 0 ? this.w.o.topLevelGate : undefined
    if (gate !== undefined && !gate.tryEnter()) {
      m.nak(USER_SHARE_RETRY_MS)
      return
    }
    try {
      await this.withinUserShare(m, id, carried)
    } finally {
      gate?.leave()
    }
  }

  private async withinUserShare(m: PulledMessage, id: string, carried: JobState): Promise<void> {
    const share = this.w.o.userShare
    // A synchronous nested call (a function calling another and waiting for it) is not counted:
    // its caller holds a place already and waits on it, so counting both could deadlock a user's
    // chains at the cap. Nested async jobs are counted (a function could start any number of them).
    const nestedSync = (carried.depth ?? 0) > 0 && carried.max_attempts === 1
    if (share === undefined || nestedSync) return this.claimAndRun(m, id, carried)
    const user = carried.user_id
    // Over the user's share: this slot takes the next message (another user's) at once, and the
    // job waits in its user's line, before the claim (no attempt counted); with the line full,
    // back to the queue.
    if (!share.tryEnter(user)) {
      if (this.w.stopping || !share.waiting.enter({ m, id, carried })) m.nak(USER_SHARE_RETRY_MS)
      return
    }
    try {
      // The place passes from each job that ends to the oldest one waiting in its user's line,
      // in this slot: the user never runs more than the share, and the line keeps its order.
      for (let job: WaitingJob | undefined = { m, id, carried }; job !== undefined;) {
        await this.claimAndRun(job.m, job.id, job.carried)
        job = this.w.stopping ? undefined : share.waiting.next(user)
      }
    } finally {
      share.leave(user)
    }
  }

  private async claimAndRun(m: PulledMessage, id: string, carried: JobState): Promise<void> {
    // A second delivery of a job this worker is claiming or running is never run beside it. Besides
    // a redelivery racing a slow `working()`, nats-server 2.9 delivers one stream message twice
    // when a redelivery first went to a dead worker's pull request: once as a redelivery and once
    // as new (delivery count 1, so deferrable: it would run without a claim). Back to the queue
    // after an ack_wait; by then the run here has ended and its state judges the delivery.
    if (this.inHand.has(id) || this.w.executing.has(id)) {
      m.nak(this.w.o.ackWaitMs)
      return
    }
    this.inHand.add(id)
    try {
      await this.claimAndRunOnce(m, id, carried)
    } finally {
      this.inHand.delete(id)
    }
  }

  private async claimAndRunOnce(m: PulledMessage, id: string, carried: JobState): Promise<void> {
    const prefetched = this.w.o.executor.prefetch?.(carried)
    if (deferrable(this.w, m, carried)) {
      if (this.w.cancelled.delete(id)) {
        // cancelled while this delivery was on its way: the cancel wrote the entry and purged the message
        m.term()
        return
      }
      // Runs now; its claim (the `running` write) follows only if it lasts (run-job.ts).
      await runJob(
        this.w,
        m,
        { state: firstClaim(carried, this.w.o.nodeId), revision: 0 },
        (p) => this.blocking(p),
        prefetched,
      )
      return
    }
    const claimed = await claimDelivery(this.w, m, id, carried)
    if (claimed !== null) await runJob(this.w, m, claimed, (p) => this.blocking(p), prefetched)
  }
}

/**
 * Whether a delivery may run before its claim is written (`WorkerOptions.runningRecordMs`): a
 * function job's first delivery, fresh from its enqueue with an id the enqueue drew (`Job-Fresh`).
 * Nothing can have written its entry but a cancel, which purges the message and is announced to
 * every worker (`cancelled`); a redelivery, a retry, a delayed job or a caller-chosen id is judged
 * on its entry as before. What this gives up: a worker that dies within the window leaves no
 * `running` entry, so the redelivery runs the job as a first claim (that attempt is not counted;
 * the next one is, its claim being written first); agent pools, which never run a job twice,
 * always claim first.
 */
function deferrable(w: WorkerState, m: PulledMessage, carried: JobState): boolean {
  const { o } = w
  return (
    (o.runningRecordMs ?? 0) > 0 &&
    RETRYABLE.has(o.pool) &&
    o.executor.speculative !== true &&
    m.deliveryCount === 1 &&
    carried.status === 'queued' &&
    m.headers?.get('Job-Fresh') === '1'
  )
}
