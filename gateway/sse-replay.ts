import type { SseEvent } from './sse-frame.ts'
import type { HeldEvents } from './sse-held-events.ts'
import type { SseRelay } from './sse.ts'
import type { SseWriter } from './sse-writer.ts'

/** Events replayed by direct get before a longer backlog is streamed by an ordered consumer. */
const DIRECT_REPLAY_LIMIT = 24

/** The stream being caught up, as the replay sees it. */
export interface ReplayTarget {
  readonly channel: string
  readonly held: HeldEvents
  readonly out: SseWriter
  /** The last relayed sequence. */
  lastSeq(): number
  isClosed(): boolean
  deliver(ev: SseEvent): void
}

/**
 * Relays the channel's stored events after `lastSeq` until the stream has nothing newer or the
 * first held live event is reached (again while the held buffer overflowed meanwhile). Waits for a
 * blocked socket instead of queueing. Returns early when the stream closes; throws when the
 * stream cannot be read.
 */
export async function replayStored(t: ReplayTarget, relay: SseRelay): Promise<void> {
  do {
    t.held.lost = false
    let next = t.lastSeq() + 1
    for (let n = 0; ; n++) {
      const first = t.held.head
      if (first !== undefined && first.seq <= next) break
      if (t.out.isBlocked) {
        await t.out.writable()
        if (t.isClosed()) return
        continue
      }
      const ev = await relay.fetch(t.channel, next)
      if (t.isClosed() || ev === null) break
      if (n >= DIRECT_REPLAY_LIMIT) {
        // A long backlog: stream the rest from `ev` (known to exist) with one ordered consumer.
        await relay.replay(t.channel, ev.seq, async (e) => {
          if (t.isClosed()) return false
          t.deliver(e)
          if (t.out.isBlocked) await t.out.writable()
          const head = t.held.head
          return !t.isClosed() && (head === undefined || head.seq > t.lastSeq() + 1)
        })
        break
      }
      t.deliver(ev)
      if (t.isClosed()) return
      next = ev.seq + 1
    }
    if (t.isClosed()) return
  } while (t.held.lost)
}
