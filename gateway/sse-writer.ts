import type { HttpResponse } from 'uWebSockets.js'

/** Written from onWritable when nothing is queued: uWS drains its buffer only on a write. */
const NUDGE = Buffer.from(':\n')

/**
 * The write side of one SSE response: uWS `write` until it reports backpressure, then frames wait
 * in a queue flushed from `onWritable`. `owed` (bytes written or queued since the socket last
 * drained completely) is an upper bound of what the client owes.
 */
export class SseWriter {
  private response: HttpResponse | undefined
  private blocked = false
  private queue: Buffer[] = []
  private owedBytes = 0
  private drained: (() => void)[] = []
  private readonly maxBufferBytes: number

  constructor(maxBufferBytes: number) {
    this.maxBufferBytes = maxBufferBytes
  }

  /** The response, once the stream started. */
  get res(): HttpResponse | undefined {
    return this.response
  }

  get isBlocked(): boolean {
    return this.blocked
  }

  get owed(): number {
    return this.owedBytes
  }

  attach(res: HttpResponse): void {
    this.response = res
  }

  /** The first write, inside the cork that writes the status and headers. */
  open(res: HttpResponse, buf: Buffer): void {
    if (!res.write(buf)) {
      this.blocked = true
      this.owedBytes = buf.length
    }
  }

  /** Writes or queues `buf`; false when the client owes more than `maxBufferBytes` (drop it). */
  write(res: HttpResponse, buf: Buffer): boolean {
    if (this.blocked) {
      this.queue.push(buf)
      this.owedBytes += buf.length
      return this.owedBytes <= this.maxBufferBytes
    }
    let ok = true
    res.cork(() => {
      ok = res.write(buf)
    })
    if (!ok) {
      this.blocked = true
      this.owedBytes = buf.length
    }
    return true
  }

  /** uWS onWritable: flushes the queue; once the socket took it all, wakes whoever waits in `writable`. */
  onWritable(res: HttpResponse): boolean {
    if (!this.blocked) return true
    const q = this.queue
    const chunk = q.length === 0 ? NUDGE : q.length === 1 ? (q[0] as Buffer) : Buffer.concat(q)
    this.queue = []
    const ok = res.write(chunk)
    if (ok) {
      this.blocked = false
      this.owedBytes = 0
      this.wake()
    }
    return ok
  }

  /** Resolves once the socket drained (or the stream closed). */
  writable(): Promise<void> {
    return new Promise<void>((resolve) => this.drained.push(resolve))
  }

  /** The queued frames as one buffer (for the final `end`), emptying the queue. */
  takeQueued(): Buffer | undefined {
    const rest = this.queue.length === 0 ? undefined : Buffer.concat(this.queue)
    this.queue = []
    return rest
  }

  /** The stream closed: drop the queue and release every waiter. */
  release(): void {
    this.queue = []
    this.wake()
  }

  private wake(): void {
    const waiting = this.drained
    this.drained = []
    for (const w of waiting) w()
  }
}
