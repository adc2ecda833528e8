import type { SseEvent } from './sse-frame.ts'

/**
 * Live events held while a stream is listening or replaying, up to a byte budget. Past it they are
 * dropped and `lost` is set: nothing is lost, these events are in the stream and a replay picks
 * them up.
 */
export class HeldEvents {
  private events: SseEvent[] = []
  private bytes = 0
  /** The buffer overflowed: replay again from the stream before going live. */
  lost = false
  private readonly maxBytes: number

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes
  }

  /** The earliest held event. */
  get head(): SseEvent | undefined {
    return this.events[0]
  }

  hold(ev: SseEvent): void {
    this.events.push(ev)
    this.bytes += ev.data.byteLength + 32
    if (this.bytes > this.maxBytes) {
      this.clear()
      this.lost = true
    }
  }

  /** The held events, emptying the buffer. */
  take(): SseEvent[] {
    const held = this.events
    this.clear()
    return held
  }

  clear(): void {
    this.events = []
    this.bytes = 0
  }
}
